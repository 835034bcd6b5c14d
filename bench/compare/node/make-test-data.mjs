// Writes a small data set in the exact shape of dataset.h WriteDatasetFiles, so the Node peers
// can be tested without the C++ driver. Not the benchmark's data: values come from a simpler
// generator, but every file, column, type and params.json key is the same.
//
//   node make-test-data.mjs --out DIR [--rows 5000] [--vectors 2000] [--dim 64] [--seed 7]
import fs from 'node:fs';
import path from 'node:path';

import * as arrow from 'apache-arrow';

const WORDS = ('the of and to in is that for it as was with be by on not he this are or his ' +
               'from at which but have an they you were her she there been one all we their ' +
               'reward policy token model rollout step value grade tool answer').split(' ');
const ROLES = ['assistant', 'tool', 'grade'];

function parseArgs(argv) {
  const opts = {out: '', rows: 5000, vectors: 2000, dim: 64, seed: 7, queries: 10};
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in opts) || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`);
    opts[key] = key === 'out' ? argv[i + 1] : Number(argv[i + 1]);
  }
  if (!opts.out) throw new Error('--out DIR is required');
  return opts;
}

// xorshift-style PRNG with 32-bit state pieces: deterministic for a seed.
function makeRandom(seed) {
  let a = (seed >>> 0) || 1, b = 0x9e3779b9, c = 0x243f6a88, d = 0xb7e15162;
  const next = () => {
    const t = b << 9;
    let r = a * 5;
    r = ((r << 7) | (r >>> 25)) * 9;
    c ^= a; d ^= b; b ^= c; a ^= d; c ^= t; d = (d << 11) | (d >>> 21);
    return (r >>> 0) / 4294967296;
  };
  for (let i = 0; i < 20; i++) next();
  return {
    float: next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),  // inclusive
  };
}

function hex16(rand) {
  let s = '';
  for (let i = 0; i < 16; i++) s += '0123456789abcdef'[Math.floor(rand.float() * 16)];
  return s;
}

function makeText(rand) {
  const target = rand.int(1024, 2048);
  let s = '';
  while (s.length < target) s += WORDS[Math.floor(rand.float() * WORDS.length)] + ' ';
  return s.slice(0, target);
}

function makeTokens(rand) {
  const n = rand.int(16, 64);
  const t = new Int32Array(n);
  for (let i = 0; i < n; i++) t[i] = rand.int(0, 50000);
  return t;
}

function makeRow(rand, id, index) {
  return {
    id,
    rollout_id: `roll-${String(Math.floor(index / 8)).padStart(7, '0')}`,
    policy_version: `v${rand.int(0, 7)}`,
    role: ROLES[index % 3],
    sequence_order: index % 8,
    reward: rand.int(0, 1023) / 1024,
    input_tokens: makeTokens(rand),
    output_tokens: makeTokens(rand),
    text: makeText(rand),
  };
}

const SCHEMA = new arrow.Schema([
  new arrow.Field('id', new arrow.Utf8(), false),
  new arrow.Field('rollout_id', new arrow.Utf8(), false),
  new arrow.Field('policy_version', new arrow.Utf8(), false),
  new arrow.Field('role', new arrow.Utf8(), false),
  new arrow.Field('sequence_order', new arrow.Int32(), false),
  new arrow.Field('reward', new arrow.Float32(), false),
  new arrow.Field('input_tokens',
                  new arrow.List(new arrow.Field('item', new arrow.Int32(), false)), false),
  new arrow.Field('output_tokens',
                  new arrow.List(new arrow.Field('item', new arrow.Int32(), false)), false),
  new arrow.Field('text', new arrow.Utf8(), false),
]);

function toBatch(rows) {
  const columns = {};
  for (const field of SCHEMA.fields) {
    const values = rows.map((r) => (field.name.endsWith('_tokens') ? Array.from(r[field.name])
                                                                      : r[field.name]));
    columns[field.name] = arrow.vectorFromArray(values, field.type);
  }
  const data = arrow.makeData({
    type: new arrow.Struct(SCHEMA.fields),
    length: rows.length,
    nullCount: 0,
    children: SCHEMA.fields.map((f) => columns[f.name].data[0]),
  });
  return new arrow.RecordBatch(SCHEMA, data);
}

// Arrow IPC stream, uncompressed, batches of batchRows.
function writeStream(file, rows, batchRows) {
  const writer = new arrow.RecordBatchStreamWriter();
  writer.reset(undefined, SCHEMA);
  for (let i = 0; i < rows.length; i += batchRows) {
    writer.write(toBatch(rows.slice(i, i + batchRows)));
  }
  writer.finish();
  fs.writeFileSync(file, writer.toUint8Array(true));
}

function main() {
  const opts = parseArgs(process.argv);
  const rand = makeRandom(opts.seed);
  const sizes = {
    rows: opts.rows, batch_rows: 256, lookups: Math.min(1000, opts.rows), get_many_batches: 10,
    get_many_ids: Math.min(512, opts.rows), puts_per_writer: 20, put_writers: [1, 8],
    vectors: opts.vectors, vector_dim: opts.dim, vector_queries: opts.queries, top_k: 10,
    sql_runs: 2, seed: opts.seed,
  };
  fs.mkdirSync(opts.out, {recursive: true});

  const ids = new Set();
  const rows = [];
  while (rows.length < sizes.rows) {
    const id = hex16(rand);
    if (ids.has(id)) continue;
    ids.add(id);
    rows.push(makeRow(rand, id, rows.length));
  }
  const shuffled = rows.map((r) => r.id);
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = rand.int(0, i);
    [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
  }
  const pick = () => rows[rand.int(0, rows.length - 1)].id;
  const lookupIds = [];
  for (let i = 0; i < sizes.lookups; i++) {
    if (i % 10 === 9) {
      let miss;
      do miss = hex16(rand); while (ids.has(miss));
      lookupIds.push(miss);
    } else {
      lookupIds.push(pick());
    }
  }
  const getManyIds = [];
  for (let b = 0; b < sizes.get_many_batches; b++) {
    const batch = [];
    for (let i = 0; i < sizes.get_many_ids; i++) batch.push(pick());
    getManyIds.push(batch);
  }
  const byId = new Map(rows.map((r) => [r.id, r]));
  const overwriteRows = shuffled.slice(0, Math.floor(sizes.rows * 0.1)).map((id) => ({
    ...byId.get(id), sequence_order: byId.get(id).sequence_order + 1000000, text: makeText(rand),
  }));
  const maxWriters = Math.max(...sizes.put_writers);
  const putRows = [];
  for (let i = 0; i < maxWriters * sizes.puts_per_writer; i++) {
    putRows.push(makeRow(rand, `put-${String(i).padStart(8, '0')}`, i));
  }

  writeStream(path.join(opts.out, 'rows.arrows'), rows, sizes.batch_rows);
  writeStream(path.join(opts.out, 'overwrite.arrows'), overwriteRows, sizes.batch_rows);
  writeStream(path.join(opts.out, 'puts.arrows'), putRows, sizes.batch_rows);

  const vectors = new Float32Array(sizes.vectors * sizes.vector_dim);
  for (let i = 0; i < vectors.length; i++) vectors[i] = rand.float() * 2 - 1;
  const queries = new Float32Array(sizes.vector_queries * sizes.vector_dim);
  for (let i = 0; i < queries.length; i++) queries[i] = rand.float() * 2 - 1;
  fs.writeFileSync(path.join(opts.out, 'vectors.f32'), Buffer.from(vectors.buffer));
  fs.writeFileSync(path.join(opts.out, 'queries.f32'), Buffer.from(queries.buffer));
  const vectorIds = [];
  for (let i = 0; i < sizes.vectors; i++) vectorIds.push(`vec-${String(i).padStart(7, '0')}`);
  fs.writeFileSync(path.join(opts.out, 'vector_ids.json'), JSON.stringify(vectorIds));

  const params = {
    sizes,
    scan: {
      policy_version: 'v3', reward_gt: 0.5, columns: ['id', 'sequence_order', 'reward'],
      predicate: "policy_version = 'v3' AND reward > 0.5",
    },
    lookup_ids: lookupIds,
    get_many_ids: getManyIds,
    overwrite_rows: overwriteRows.length,
    sql: {  // dataset.h SqlSpec
      queries: [
        'SELECT policy_version, role, count(*) FROM {table} GROUP BY policy_version, role ' +
            'ORDER BY policy_version, role',
        'SELECT role, count(*), max(rollout_id) FROM {table} WHERE reward > 0.5 GROUP BY ' +
            'role ORDER BY role',
      ],
      table_placeholder: '{table}',
    },
  };
  fs.writeFileSync(path.join(opts.out, 'params.json'), JSON.stringify(params));
  console.error(`make-test-data: wrote ${rows.length} rows, ${sizes.vectors} vectors of dim ` +
                `${sizes.vector_dim} to ${opts.out}`);
}

main();
