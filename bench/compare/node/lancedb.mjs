// LanceDB (@lancedb/lancedb) as a bench/compare peer: "lancedb" (plain add, BTREE index on
// id, mergeInsert for overwrites) and "lancedb-lsm" (MemWAL write path, write-only from Node).
import fs from 'node:fs';
import path from 'node:path';

import * as lancedb from '@lancedb/lancedb';

import {
  arrow, digest, Inputs, logicalBytes, lookupLines, now, overwriteAnswer, overwriteExpectation,
  packageVersion, putBytes, putsBudgetMs, scanAnswer, sqlQuote, totalRows, unsupported,
  vectorAnswer,
} from './common.mjs';

const LANCE_VERSION = packageVersion('@lancedb/lancedb');
const ARROW_VERSION = packageVersion('apache-arrow');

const DURABILITY = 'process crash only (Lance does not fsync on local filesystems)';
const LSM_UNREADABLE = 'Node SDK has no read path for MemWAL rows (write-only)';
const ROWS_TABLE = 'rows';
const VECTOR_TABLE = 'vectors';
const HYBRID_TABLE = 'hybrid';
// W9's full-text index: the "simple" tokenizer (split on whitespace and punctuation),
// lowercased, without stemming, stop-word removal or folding, so its tokens are strata's
// (TextTokens) on the data set's ASCII words; no positions (no phrase queries in W9).
const HYBRID_FTS = {
  baseTokenizer: 'simple', lowercase: true, stem: false, removeStopWords: false,
  asciiFolding: false, withPosition: false,
};
const READ_CHUNK = 512;  // ids per IN list when reading W6 back
// optimize() options: compaction plus removal of every old version (no other process uses
// the table, so deleting unverified files is safe).
const optimizeAll = () => ({cleanupOlderThan: new Date(), deleteUnverified: true});

// The table schema: the input's columns with id declared non-nullable (MemWAL needs that of a
// primary key; the plain table gets the same schema so both paths store identical data).
function tableSchema(inputSchema) {
  return new arrow.Schema(inputSchema.fields.map(
      (f) => (f.name === 'id' ? new arrow.Field('id', f.type, false) : f)));
}

// Re-labels a batch with `schema` (same column types, possibly different nullability).
function relabel(batch, schema) {
  const data = arrow.makeData({
    type: new arrow.Struct(schema.fields), length: batch.numRows, nullCount: 0,
    children: batch.data.children,
  });
  return new arrow.Table([new arrow.RecordBatch(schema, data)]);
}

function idList(ids) { return ids.map(sqlQuote).join(', '); }

class LanceEngine {
  constructor(variant, dir, dataDir) {
    this.lsm = variant === 'lancedb-lsm';
    this.name = variant;
    this.dir = dir;
    this.inputs = new Inputs(dataDir);
    this.db = null;
    this.table = null;
    this.schema = null;
  }

  describe() {
    const common = `connect("${this.dir}"); table "${ROWS_TABLE}" created empty from an explicit ` +
        'Arrow schema (id utf8 non-nullable, other columns as the input; Lance defaults for ' +
        'data storage version and file sizes); ';
    const settings = this.lsm ?
        common + 'setUnenforcedPrimaryKey("id"); setLsmWriteSpec({specType: "bucket", ' +
            'column: "id", numBuckets: 1}) (MemWAL, writer defaults: durable_write=true); W1 ' +
            'mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(batch) ' +
            'per 256-row batch, closeLsmWriters() at the end; W2 same with one row per call on ' +
            'a table of its own per run (dropped after); reads: none (' + LSM_UNREADABLE + ')' :
        common + 'W1 table.add(batch) per 256-row batch (one table version each), then ' +
            'untimed optimize({cleanupOlderThan: now, deleteUnverified: true}) and ' +
            'createIndex("id", {config: Index.btree()}) (docs: optimize after many small ' +
            'appends; BTREE for point lookups); W2 a table of its own ' +
            'per run (dropped after), each writer awaits add(one row) in turn; W3 ' +
            'query().where(predicate).select(columns).toArrow(); W4 query().where("id = ...")' +
            '.select(["id","sequence_order"]).limit(1) per id; W5 where("id IN (512 ids)"); W6 ' +
            'mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll() per 256-row ' +
            'batch, read back with where("id IN (...)") 512 ids at a time; W7 optimize(' +
            '{cleanupOlderThan: now, deleteUnverified: true}); W8 table "vectors" (id utf8, ' +
            'vector fixed_size_list<float32>[dim]) loaded untimed, no vector index: ' +
            'vectorSearch(q).distanceType("l2").bypassVectorIndex().limit(top_k) (flat scan), ' +
            'then (untimed for the table, in the note) an IVF_PQ index built and queried; W9 ' +
            'table "hybrid" (id, text, topic utf8, vector fixed_size_list<float32>[dim]) ' +
            'loaded untimed with an FTS index on text (' + JSON.stringify(HYBRID_FTS) + ') and ' +
            'a BITMAP index on topic, no vector index: query().fullTextSearch(text)' +
            '.nearestTo(q).distanceType("l2").bypassVectorIndex().where("topic = ...")' +
            '.select(["id"]).limit(top_k) (hybrid: flat vector scan + FTS, each limited to ' +
            'top_k, prefiltered, fused by the default RRF reranker, k = 60)';
    return {
      name: this.name, durability: DURABILITY, settings,
      version: `@lancedb/lancedb ${LANCE_VERSION} (apache-arrow ${ARROW_VERSION})`,
    };
  }

  async open() {
    fs.mkdirSync(this.dir, {recursive: true});
    this.schema = tableSchema(this.inputs.rows.schema);  // loads rows.arrows (untimed)
    this.db = await lancedb.connect(this.dir);
    this.table = await this.#createRowTable(ROWS_TABLE);
    return {};
  }

  async #createRowTable(name) {
    const table = await this.db.createEmptyTable(name, this.schema, {mode: 'create'});
    if (this.lsm) {
      await table.setUnenforcedPrimaryKey('id');
      await table.setLsmWriteSpec({specType: 'bucket', column: 'id', numBuckets: 1});
    }
    return table;
  }

  #requireOpen() {
    if (!this.table) throw new Error('the engine is not open (send "open" first)');
  }

  // One durable write of `data` (an Arrow table) on the engine's path.
  async #write(table, data) {
    if (this.lsm) {
      await table.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(data);
    } else {
      await table.add(data);
    }
  }

  async ingest() {
    this.#requireOpen();
    const {batches} = this.inputs.rows;
    const prepared = batches.map((b) => relabel(b, this.schema));
    const bytes = batches.reduce((a, b) => a + logicalBytes(b), 0);
    const latencies = [];
    const start = now();
    for (const data of prepared) {
      const t0 = now();
      await this.#write(this.table, data);
      latencies.push((now() - t0) * 1000);
    }
    if (this.lsm) await this.table.closeLsmWriters();
    const seconds = (now() - start) / 1000;
    let note;
    if (this.lsm) {
      note = 'rows written through the MemWAL (LSM) path; they are not readable from the ' +
          'Node SDK, so no read workload runs on them';
    } else {
      // LanceDB's docs recommend optimize() after many small appends, and a BTREE index for
      // point lookups. Without the compaction every later read and mergeInsert pays per
      // fragment (one per add): a 256-row mergeInsert took 150 ms at 196 fragments, 25 ms after.
      const t0 = now();
      const stats = await this.table.optimize(optimizeAll());
      const t1 = now();
      await this.table.createIndex('id', {config: lancedb.Index.btree()});
      const t2 = now();
      note = `then, untimed as LanceDB's docs recommend: optimize() ` +
          `${stats.compaction.fragmentsRemoved} fragments -> ${stats.compaction.fragmentsAdded} ` +
          `in ${((t1 - t0) / 1000).toFixed(2)} s and a BTREE index on id in ` +
          `${((t2 - t1) / 1000).toFixed(2)} s`;
    }
    return {
      seconds, latencies_us: latencies, ops: prepared.length, rows: totalRows(this.inputs.rows),
      bytes, note,
    };
  }

  async puts(writers) {
    this.#requireOpen();
    const perWriter = this.inputs.params.sizes.puts_per_writer;
    const rows = this.inputs.putRows;
    if (rows.length < writers * perWriter) {
      throw new Error(`puts.arrows has ${rows.length} rows, ${writers} writers x ` +
                      `${perWriter} puts need ${writers * perWriter}`);
    }
    const name = `puts_${writers}`;
    const table = await this.#createRowTable(name);
    const prepared = rows.slice(0, writers * perWriter).map((b) => relabel(b, this.schema));
    const latencies = [];
    const done = new Array(writers).fill(0);
    const budgetMs = putsBudgetMs(this.inputs.params);
    const writer = async (w) => {
      for (let i = w * perWriter; i < (w + 1) * perWriter && now() - start < budgetMs; i++) {
        const t0 = now();
        await this.#write(table, prepared[i]);
        latencies.push((now() - t0) * 1000);
        done[w]++;
      }
    };
    const start = now();
    await Promise.all(Array.from({length: writers}, (_, w) => writer(w)));
    if (this.lsm) await table.closeLsmWriters();
    const seconds = (now() - start) / 1000;
    const bytes = putBytes(rows, perWriter, done);
    table.close();
    await this.db.dropTable(name);  // keeps W7's bytes on disk about the rows table alone
    return {
      seconds, latencies_us: latencies, ops: latencies.length, rows: latencies.length, bytes,
      note: writers === 1 ? 'one writer' : `${writers} concurrent async writers on one table`,
    };
  }

  async scan() {
    if (this.lsm) return unsupported(LSM_UNREADABLE);
    this.#requireOpen();
    const {predicate, columns} = this.inputs.params.scan;
    const start = now();
    const result = await this.table.query().where(predicate).select(columns).toArrow();
    const seconds = (now() - start) / 1000;
    const rows = result.toArray().map((r) => ({
      id: r.id, sequence_order: r.sequence_order, reward: r.reward,
    }));
    return {seconds, ops: 1, rows: rows.length, answer: scanAnswer(rows)};
  }

  async #lookupBatch(ids, limit) {
    let q = this.table.query().select(['id', 'sequence_order']);
    q = ids.length === 1 ? q.where(`id = ${sqlQuote(ids[0])}`) : q.where(`id IN (${idList(ids)})`);
    if (limit) q = q.limit(limit);
    const found = new Map();
    for (const r of await q.toArray()) found.set(r.id, r.sequence_order);
    return found;
  }

  async lookup() {
    if (this.lsm) return unsupported(LSM_UNREADABLE);
    this.#requireOpen();
    const ids = this.inputs.params.lookup_ids;
    const latencies = [];
    const found = new Map();
    const start = now();
    for (const id of ids) {
      const t0 = now();
      const got = await this.#lookupBatch([id], 1);
      latencies.push((now() - t0) * 1000);
      if (got.has(id)) found.set(id, got.get(id));
    }
    const seconds = (now() - start) / 1000;
    const lines = [];
    const count = lookupLines(ids, found, lines);
    return {
      seconds, latencies_us: latencies, ops: ids.length, rows: count,
      answer: {count, digest: digest(lines)},
    };
  }

  async getMany() {
    if (this.lsm) return unsupported(LSM_UNREADABLE);
    this.#requireOpen();
    const batches = this.inputs.params.get_many_ids;
    const latencies = [];
    const results = [];
    const start = now();
    for (const ids of batches) {
      const t0 = now();
      results.push(await this.#lookupBatch(ids, 0));
      latencies.push((now() - t0) * 1000);
    }
    const seconds = (now() - start) / 1000;
    const lines = [];
    let count = 0;
    batches.forEach((ids, b) => { count += lookupLines(ids, results[b], lines); });
    return {
      seconds, latencies_us: latencies, ops: batches.length, rows: count,
      answer: {count, digest: digest(lines)},
    };
  }

  async overwrite() {
    if (this.lsm) return unsupported(LSM_UNREADABLE);
    this.#requireOpen();
    const stream = this.inputs.overwrite;
    const prepared = stream.batches.map((b) => relabel(b, this.schema));
    const bytes = stream.batches.reduce((a, b) => a + logicalBytes(b), 0);
    const expected = overwriteExpectation(stream.batches);
    const latencies = [];
    const start = now();
    for (const data of prepared) {
      const t0 = now();
      await this.table.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll()
          .execute(data);
      latencies.push((now() - t0) * 1000);
    }
    const written = now();
    const found = new Map();
    for (let i = 0; i < expected.length; i += READ_CHUNK) {
      const ids = expected.slice(i, i + READ_CHUNK).map((e) => e.id);
      for (const [id, seq] of await this.#lookupBatch(ids, 0)) found.set(id, seq);
    }
    const end = now();
    const total = await this.table.countRows();
    return {
      seconds: (end - start) / 1000, latencies_us: latencies, ops: prepared.length,
      rows: expected.length, bytes, answer: overwriteAnswer(expected, found), total_rows: total,
      note: `write ${((written - start) / 1000).toFixed(2)} s + read back ` +
          `${((end - written) / 1000).toFixed(2)} s`,
    };
  }

  async compact() {
    if (this.lsm) return unsupported('Node SDK has no merge path for MemWAL rows (write-only)');
    this.#requireOpen();
    const start = now();
    const stats = await this.table.optimize(optimizeAll());
    const seconds = (now() - start) / 1000;
    const c = stats.compaction;
    return {
      seconds, ops: 1,
      note: `optimize: ${c.fragmentsRemoved} fragments -> ${c.fragmentsAdded}, ` +
          `${stats.prune.oldVersionsRemoved} old versions and ${stats.prune.bytesRemoved} ` +
          'bytes removed',
    };
  }

  async vector() {
    if (this.lsm) return unsupported(LSM_UNREADABLE);
    this.#requireOpen();
    const {top_k: topK, vector_queries: nq} = this.inputs.params.sizes;
    const {ids, data, dim} = this.inputs.vectors;
    const queries = this.inputs.queries;
    const table = await this.#loadVectors(ids, data, dim);
    const latencies = [];
    const results = [];
    const start = now();
    for (let q = 0; q < nq; q++) {
      const t0 = now();
      const rows = await table.vectorSearch(queries.subarray(q * dim, (q + 1) * dim))
                       .distanceType('l2').bypassVectorIndex().select(['id', '_distance'])
                       .limit(topK).toArray();
      latencies.push((now() - t0) * 1000);
      results.push(rows.map((r) => r.id));
    }
    const seconds = (now() - start) / 1000;

    // Beside the timed flat scan, for strata's ANN figures: an IVF_PQ index (Lance's defaults:
    // sqrt(rows) partitions, dim / 16 sub-vectors) built on the same data, timed on its own,
    // its size on disk, and the same queries through it (default nprobes) with their recall
    // against the flat answers.
    const buildStart = now();
    await table.createIndex('vector', {config: lancedb.Index.ivfPq({distanceType: 'l2'})});
    const buildSeconds = (now() - buildStart) / 1000;
    const indexBytes = directoryBytes(path.join(this.dir, `${VECTOR_TABLE}.lance`, '_indices'));
    const search = (q) => table.vectorSearch(queries.subarray(q * dim, (q + 1) * dim))
                              .distanceType('l2').select(['id', '_distance']).limit(topK)
                              .toArray();
    await search(0);  // loads the index
    let hits = 0;
    let wanted = 0;
    const annStart = now();
    for (let q = 0; q < nq; q++) {
      const rows = await search(q);
      const truth = new Set(results[q]);
      for (const r of rows) hits += truth.has(r.id) ? 1 : 0;
      wanted += results[q].length;
    }
    const annSeconds = (now() - annStart) / 1000;
    table.close();
    return {
      seconds, latencies_us: latencies, ops: nq, rows: nq * topK, answer: vectorAnswer(results),
      note: `flat scan over ${ids.length} x ${dim} float32 (no vector index). IVF_PQ ` +
          `(createIndex("vector", Index.ivfPq({distanceType: "l2"})), Lance defaults) built in ` +
          `${buildSeconds.toFixed(1)} s, ${(indexBytes / 1048576).toFixed(1)} MiB; ` +
          `${(nq / annSeconds).toFixed(1)} queries/s (${(seconds / annSeconds).toFixed(1)}x ` +
          `flat), recall@${topK} ${(wanted ? hits / wanted : 0).toFixed(3)} vs flat`,
    };
  }

  // W10: the Node SDK runs no SQL: a query takes a filter and a projection, and the only
  // aggregate is countRows(filter), so a GROUP BY would be aggregated in JavaScript.
  sql() {
    if (this.lsm) return unsupported(LSM_UNREADABLE);
    return unsupported('no SQL and no GROUP BY in the Node SDK (only countRows(filter))');
  }

  async hybrid() {
    if (this.lsm) return unsupported(LSM_UNREADABLE);
    this.#requireOpen();
    const {top_k: topK, hybrid_queries: nq} = this.inputs.params.sizes;
    const h = this.inputs.hybrid;
    const loadStart = now();
    const table = await this.#loadHybrid(h);
    await table.createIndex('text', {config: lancedb.Index.fts(HYBRID_FTS)});
    await table.createIndex('topic', {config: lancedb.Index.bitmap()});
    const loadSeconds = (now() - loadStart) / 1000;
    const latencies = [];
    const results = [];
    const start = now();
    for (let q = 0; q < nq; q++) {
      const t0 = now();
      const rows = await table.query().fullTextSearch(h.queryTexts[q])
                       .nearestTo(h.queries.subarray(q * h.dim, (q + 1) * h.dim))
                       .distanceType('l2').bypassVectorIndex()
                       .where(`topic = ${sqlQuote(h.queryTopics[q])}`)
                       .select(['id']).limit(topK).toArray();
      latencies.push((now() - t0) * 1000);
      results.push(rows.map((r) => r.id));
    }
    const seconds = (now() - start) / 1000;
    table.close();
    return {
      seconds, latencies_us: latencies, ops: nq, rows: results.reduce((a, r) => a + r.length, 0),
      result_ids: results,
      note: `hybrid query (FTS + flat vector scan, topic prefilter, RRF) over ${h.ids.length} ` +
          `records x ${h.dim} float32; untimed: load + FTS and BITMAP index builds ` +
          `${loadSeconds.toFixed(1)} s`,
    };
  }

  // The W9 table, written untimed in batches of 8192 rows.
  async #loadHybrid(h) {
    const item = new arrow.Field('item', new arrow.Float32(), true);
    const schema = new arrow.Schema([
      new arrow.Field('id', new arrow.Utf8(), false),
      new arrow.Field('text', new arrow.Utf8(), false),
      new arrow.Field('topic', new arrow.Utf8(), false),
      new arrow.Field('vector', new arrow.FixedSizeList(h.dim, item), false),
    ]);
    const strings = (values) => arrow.vectorFromArray(values, new arrow.Utf8()).data[0];
    const batches = [];
    for (let i = 0; i < h.ids.length; i += 8192) {
      const n = Math.min(8192, h.ids.length - i);
      const values = arrow.makeData({
        type: new arrow.Float32(), length: n * h.dim, nullCount: 0,
        data: h.vectors.subarray(i * h.dim, (i + n) * h.dim),
      });
      const vectors = arrow.makeData({
        type: schema.fields[3].type, length: n, nullCount: 0, child: values,
      });
      const struct = arrow.makeData({
        type: new arrow.Struct(schema.fields), length: n, nullCount: 0,
        children: [strings(h.ids.slice(i, i + n)), strings(h.texts.slice(i, i + n)),
                   strings(h.topics.slice(i, i + n)), vectors],
      });
      batches.push(new arrow.RecordBatch(schema, struct));
    }
    return this.db.createTable(HYBRID_TABLE, new arrow.Table(schema, batches), {mode: 'overwrite'});
  }

  // The W8 table, written untimed in batches of 8192 rows.
  async #loadVectors(ids, data, dim) {
    const item = new arrow.Field('item', new arrow.Float32(), true);
    const schema = new arrow.Schema([
      new arrow.Field('id', new arrow.Utf8(), false),
      new arrow.Field('vector', new arrow.FixedSizeList(dim, item), false),
    ]);
    const batches = [];
    for (let i = 0; i < ids.length; i += 8192) {
      const n = Math.min(8192, ids.length - i);
      const values = arrow.makeData({
        type: new arrow.Float32(), length: n * dim, nullCount: 0,
        data: data.subarray(i * dim, (i + n) * dim),
      });
      const vectors = arrow.makeData({
        type: schema.fields[1].type, length: n, nullCount: 0, child: values,
      });
      const idData = arrow.vectorFromArray(ids.slice(i, i + n), new arrow.Utf8()).data[0];
      const struct = arrow.makeData({
        type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children: [idData, vectors],
      });
      batches.push(new arrow.RecordBatch(schema, struct));
    }
    return this.db.createTable(VECTOR_TABLE, new arrow.Table(schema, batches), {mode: 'overwrite'});
  }

  async close() {
    if (this.table) {
      this.table.close();
      this.table = null;
    }
    if (this.db) {
      this.db.close();
      this.db = null;
    }
    return {};
  }
}

// Bytes of the files under `dir`, recursively (0 when it does not exist).
function directoryBytes(dir) {
  if (!fs.existsSync(dir)) return 0;
  let bytes = 0;
  for (const entry of fs.readdirSync(dir, {withFileTypes: true})) {
    const p = path.join(dir, entry.name);
    bytes += entry.isDirectory() ? directoryBytes(p) : fs.statSync(p).size;
  }
  return bytes;
}

export function makeEngine(variant, dir, dataDir) {
  if (variant !== 'lancedb' && variant !== 'lancedb-lsm') {
    throw new Error(`lancedb.mjs does not run engine "${variant}"`);
  }
  return new LanceEngine(variant, path.resolve(dir), dataDir);
}
