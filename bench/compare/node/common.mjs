// Shared by the Node peers: reading the driver's input files (dataset.h WriteDatasetFiles),
// the answer digests defined in engine.h, and small timing helpers.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {createRequire} from 'node:module';
import {fileURLToPath} from 'node:url';

// The CommonJS build of apache-arrow: the instance @lancedb/lancedb requires. Importing the ESM
// build instead gives a second copy whose Table/RecordBatch fail LanceDB's instanceof checks.
const arrow = createRequire(import.meta.url)('apache-arrow');

export {arrow};

// The row columns every *.arrows file carries, in order, with the Arrow type names we accept.
export const ROW_COLUMNS = [
  ['id', 'Utf8'], ['rollout_id', 'Utf8'], ['policy_version', 'Utf8'], ['role', 'Utf8'],
  ['sequence_order', 'Int32'], ['reward', 'Float32'], ['input_tokens', 'List<Int32>'],
  ['output_tokens', 'List<Int32>'], ['text', 'Utf8'],
];

// The installed version of an npm package (its package.json is not always exported).
export function packageVersion(name) {
  let dir = path.dirname(fileURLToPath(import.meta.resolve(name)));
  for (; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (pkg.name === name) return pkg.version;
    }
  }
  return 'unknown';
}

export const now = () => performance.now();  // milliseconds, sub-microsecond resolution

function checkRowSchema(schema, file) {
  const got = schema.fields.map((f) => `${f.name}:${f.type}`).join(', ');
  const want = ROW_COLUMNS.map(([n, t]) => `${n}:${t}`).join(', ');
  if (got !== want) throw new Error(`${file}: columns are [${got}], expected [${want}]`);
}

// fs.readFileSync refuses files over 2 GiB; the full data set's rows.arrows is close to that.
function readWhole(file) {
  const size = fs.statSync(file).size;
  const buf = Buffer.allocUnsafe(size);
  const fd = fs.openSync(file, 'r');
  try {
    for (let off = 0; off < size;) {
      const n = fs.readSync(fd, buf, off, Math.min(size - off, 1 << 30), off);
      if (n === 0) throw new Error(`${file}: short read at byte ${off} of ${size}`);
      off += n;
    }
  } finally {
    fs.closeSync(fd);
  }
  return buf;
}

// One Arrow IPC stream file -> {schema, batches}. Throws with the file name on any mismatch.
export function readRowStream(file) {
  if (!fs.existsSync(file)) throw new Error(`input file ${file} is missing`);
  const reader = arrow.RecordBatchReader.from(readWhole(file)).open();
  const schema = reader.schema;  // cleared once the reader reaches the end
  if (!schema) throw new Error(`${file}: not an Arrow IPC stream`);
  checkRowSchema(schema, file);
  const batches = [];
  for (const batch of reader) batches.push(batch);
  return {schema, batches};
}

// The bytes a row carries (dataset.h BenchRow::LogicalBytes): string bytes + 4 per int, float
// and token. (A sliced Data's valueOffsets are already sliced: they are indexed from 0.)
export function logicalBytes(batch) {
  let bytes = 0;
  for (const name of ['id', 'rollout_id', 'policy_version', 'role', 'text']) {
    const data = batch.getChild(name).data;
    for (const d of data) bytes += d.valueOffsets[d.length] - d.valueOffsets[0];
  }
  bytes += 8 * batch.numRows;  // sequence_order + reward
  for (const name of ['input_tokens', 'output_tokens']) {
    for (const d of batch.getChild(name).data) {
      bytes += 4 * (d.valueOffsets[d.length] - d.valueOffsets[0]);
    }
  }
  return bytes;
}

// W2: milliseconds a writer may keep putting (sizes.puts_seconds; absent = no bound).
export function putsBudgetMs(params) {
  const s = params.sizes.puts_seconds;
  return typeof s === 'number' && s > 0 ? s * 1000 : Infinity;
}

// W2: logical bytes of the puts made; writer w made done[w] of rows[w * perWriter, ...).
export function putBytes(rows, perWriter, done) {
  let bytes = 0;
  done.forEach((n, w) => {
    for (let i = w * perWriter; i < w * perWriter + n; i++) bytes += logicalBytes(rows[i]);
  });
  return bytes;
}

// Everything the peer reads from DATA_DIR, loaded lazily (each piece once) and never timed.
export class Inputs {
  constructor(dataDir) {
    this.dir = dataDir;
    this.cache = new Map();
  }
  #once(key, load) {
    if (!this.cache.has(key)) this.cache.set(key, load());
    return this.cache.get(key);
  }
  get params() {
    return this.#once('params', () => {
      const file = path.join(this.dir, 'params.json');
      if (!fs.existsSync(file)) throw new Error(`input file ${file} is missing`);
      const p = JSON.parse(fs.readFileSync(file, 'utf8'));
      for (const key of ['sizes', 'scan', 'lookup_ids', 'get_many_ids', 'overwrite_rows']) {
        if (!(key in p)) throw new Error(`${file}: key "${key}" is missing`);
      }
      for (const key of ['rows', 'batch_rows', 'puts_per_writer', 'vectors', 'vector_dim',
                         'vector_queries', 'top_k']) {
        if (typeof p.sizes[key] !== 'number') throw new Error(`${file}: sizes.${key} is missing`);
      }
      if (typeof p.scan.predicate !== 'string' || !Array.isArray(p.scan.columns)) {
        throw new Error(`${file}: scan.predicate / scan.columns are missing`);
      }
      return p;
    });
  }
  // W10: {runs, query(q, table)}: the queries of params.json "sql" with the table's name in
  // place of its placeholder, each run sizes.sql_runs times.
  get sql() {
    return this.#once('sql', () => {
      const spec = this.params.sql;
      const runs = this.params.sizes.sql_runs;
      if (!spec || !Array.isArray(spec.queries) || typeof spec.table_placeholder !== 'string' ||
          !Number.isInteger(runs) || runs < 1) {
        throw new Error('params.json: "sql" {queries, table_placeholder} or sizes.sql_runs ' +
                        'missing');
      }
      return {
        runs, count: spec.queries.length,
        query: (q, table) => spec.queries[q].replaceAll(spec.table_placeholder, table),
      };
    });
  }
  get rows() { return this.#once('rows', () => readRowStream(path.join(this.dir, 'rows.arrows'))); }
  get overwrite() {
    return this.#once('overwrite', () => {
      const s = readRowStream(path.join(this.dir, 'overwrite.arrows'));
      const n = s.batches.reduce((a, b) => a + b.numRows, 0);
      if (n !== this.params.overwrite_rows) {
        throw new Error(`overwrite.arrows has ${n} rows, params.json overwrite_rows says ` +
                        `${this.params.overwrite_rows}`);
      }
      return s;
    });
  }
  get puts() { return this.#once('puts', () => readRowStream(path.join(this.dir, 'puts.arrows'))); }
  // The W2 rows as plain objects, one per put (rows for writer w are [w * per_writer, ...)).
  get putRows() {
    return this.#once('putRows', () => {
      const out = [];
      for (const b of this.puts.batches) {
        for (let i = 0; i < b.numRows; i++) out.push(b.slice(i, i + 1));
      }
      return out;
    });
  }
  get vectors() {
    return this.#once('vectors', () => {
      const {vectors: n, vector_dim: dim} = this.params.sizes;
      const data = readFloats(path.join(this.dir, 'vectors.f32'), n * dim);
      const idFile = path.join(this.dir, 'vector_ids.json');
      const ids = JSON.parse(fs.readFileSync(idFile, 'utf8'));
      if (ids.length !== n) throw new Error(`${idFile} has ${ids.length} ids, sizes.vectors ${n}`);
      return {ids, data, dim};
    });
  }
  get queries() {
    return this.#once('queries', () => {
      const {vector_queries: n, vector_dim: dim} = this.params.sizes;
      return readFloats(path.join(this.dir, 'queries.f32'), n * dim);
    });
  }
  // W9: {ids, texts, topics, queryTexts, queryTopics, vectors, queries, dim} (topics as
  // names, vectors and queries row-major Float32Arrays).
  get hybrid() {
    return this.#once('hybrid', () => {
      const {hybrid_records: n, hybrid_queries: nq, hybrid_dim: dim} = this.params.sizes;
      if ([n, nq, dim].some((v) => typeof v !== 'number')) {
        throw new Error('params.json: sizes.hybrid_records / hybrid_queries / hybrid_dim missing');
      }
      const file = path.join(this.dir, 'hybrid.json');
      if (!fs.existsSync(file)) throw new Error(`input file ${file} is missing`);
      const h = JSON.parse(fs.readFileSync(file, 'utf8'));
      for (const [key, want] of [['ids', n], ['texts', n], ['topics', n], ['query_texts', nq],
                                 ['query_topics', nq]]) {
        if (!Array.isArray(h[key]) || h[key].length !== want) {
          throw new Error(`${file}: "${key}" is not an array of ${want}`);
        }
      }
      return {
        ids: h.ids, texts: h.texts, topics: h.topics, queryTexts: h.query_texts,
        queryTopics: h.query_topics, dim,
        vectors: readFloats(path.join(this.dir, 'hybrid_vectors.f32'), n * dim),
        queries: readFloats(path.join(this.dir, 'hybrid_queries.f32'), nq * dim),
      };
    });
  }
}

function readFloats(file, count) {
  if (!fs.existsSync(file)) throw new Error(`input file ${file} is missing`);
  const buf = fs.readFileSync(file);
  if (buf.length !== count * 4) {
    throw new Error(`${file} is ${buf.length} bytes, expected ${count * 4} (${count} float32)`);
  }
  // Copy into an aligned buffer (readFileSync may return a pooled, unaligned slice).
  const out = new Float32Array(count);
  new Uint8Array(out.buffer).set(buf);
  return out;
}

// Answers (engine.h): lowercase hex SHA-256 of lines, each ending in '\n'.
export function digest(lines) {
  const h = crypto.createHash('sha256');
  for (const line of lines) h.update(line + '\n');
  return h.digest('hex');
}

export const rewardK = (reward) => Math.round(reward * 1024);

// W3: rows = [{id, sequence_order, reward}] in any order.
export function scanAnswer(rows) {
  const sorted = rows.slice().sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    count: sorted.length,
    digest: digest(sorted.map((r) => `${r.id}\t${r.sequence_order}\t${rewardK(r.reward)}`)),
  };
}

// W4 / W5: ids in request order, found = Map id -> sequence_order.
export function lookupLines(ids, found, lines) {
  let count = 0;
  for (const id of ids) {
    if (found.has(id)) {
      count++;
      lines.push(`${id}\t${found.get(id)}`);
    } else {
      lines.push(`${id}\t-`);
    }
  }
  return count;
}

// W6: expected = overwrite rows in order [{id, sequence_order}], found = Map id -> seq read.
export function overwriteAnswer(expected, found) {
  const lines = [];
  let count = 0;
  for (const {id, sequence_order: want} of expected) {
    if (!found.has(id)) {
      lines.push(`${id}\t-`);
      continue;
    }
    const got = found.get(id);
    if (got === want) count++;
    lines.push(`${id}\t${got}`);
  }
  return {count, digest: digest(lines)};
}

// W6 input: the overwrite rows' ids and new sequence_orders, in file order.
export function overwriteExpectation(batches) {
  const out = [];
  for (const b of batches) {
    const ids = b.getChild('id');
    const seq = b.getChild('sequence_order');
    for (let i = 0; i < b.numRows; i++) out.push({id: ids.get(i), sequence_order: seq.get(i)});
  }
  return out;
}

// W8: results[q] = ids by ascending distance.
export function vectorAnswer(results) {
  return {count: results.length, digest: digest(results.map((ids, q) => `${q}\t${ids.join(',')}`))};
}

// W10: one result value as answer text (engine.h): integers in decimal (DuckDB's BIGINT
// count arrives as a bigint), text as is, NULL as "NULL".
function sqlValueText(v) {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'string') return String(v);
  throw new Error(`W10: a result value of type ${typeof v} has no answer text`);
}

// W10: results[q] = query q's rows (arrays of values) -> "q<q+1>\tv1\tv2..." lines.
export function sqlAnswer(results) {
  const lines = [];
  results.forEach((rows, q) => {
    for (const row of rows) lines.push([`q${q + 1}`, ...row.map(sqlValueText)].join('\t'));
  });
  return {count: lines.length, digest: digest(lines)};
}

export function sqlQuote(s) { return `'${String(s).replaceAll("'", "''")}'`; }

export function totalRows(stream) { return stream.batches.reduce((a, b) => a + b.numRows, 0); }

export function unsupported(reason) { return {supported: false, reason}; }
