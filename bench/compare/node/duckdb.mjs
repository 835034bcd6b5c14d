// DuckDB (@duckdb/node-api) as a bench/compare peer: one database file in ENGINE_DIR, id as
// PRIMARY KEY (an ART index), appender ingest, and a sync step after every write.
//
// Sync modes (peer.mjs --duckdb-sync): "commit" (default) relies on the commit, which fsyncs
// DuckDB's WAL (strace: one fsync of the .wal per commit), so every batch / put is durable when
// its commit returns. "checkpoint" adds a CHECKPOINT after each one.
// A checkpoint rewrites the PRIMARY KEY's ART index, so its cost grows with the table
// (measured: 30 ms at 0 rows, 1.7 s at 50k rows; 25 ms without the key). Checkpoint mode
// therefore cannot ingest 1M rows in the suite's time budget, and commit mode raises
// checkpoint_threshold so the automatic checkpoint (default: every 16 MiB of WAL) does not
// fire during the workloads either; W7's CHECKPOINT then pays for it, timed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import * as duckdb from '@duckdb/node-api';

import {
  digest, Inputs, logicalBytes, lookupLines, now, overwriteAnswer, overwriteExpectation,
  packageVersion, putBytes, putsBudgetMs, scanAnswer, sqlAnswer, totalRows, unsupported,
  vectorAnswer,
} from './common.mjs';

const DB_FILE = 'strata.duckdb';
const READ_CHUNK = 512;  // ids per IN list when reading W6 back
const NO_AUTO_CHECKPOINT = '1TB';  // checkpoint_threshold in commit mode (see above)

const COLUMNS = [
  ['id', 'VARCHAR PRIMARY KEY', duckdb.VARCHAR], ['rollout_id', 'VARCHAR', duckdb.VARCHAR],
  ['policy_version', 'VARCHAR', duckdb.VARCHAR], ['role', 'VARCHAR', duckdb.VARCHAR],
  ['sequence_order', 'INTEGER', duckdb.INTEGER], ['reward', 'FLOAT', duckdb.FLOAT],
  ['input_tokens', 'INTEGER[]', duckdb.LIST(duckdb.INTEGER)],
  ['output_tokens', 'INTEGER[]', duckdb.LIST(duckdb.INTEGER)], ['text', 'VARCHAR', duckdb.VARCHAR],
];
const CREATE_COLUMNS = COLUMNS.map(([n, t]) => `${n} ${t}`).join(', ');
const TYPES = COLUMNS.map(([, , t]) => t);

// An Arrow batch -> DuckDB column values (strings, numbers, list values), in COLUMNS order.
function toColumns(batch) {
  return COLUMNS.map(([name]) => {
    const vec = batch.getChild(name);
    if (name.endsWith('_tokens')) {
      const out = new Array(vec.length);
      for (let i = 0; i < vec.length; i++) out[i] = duckdb.listValue(Array.from(vec.get(i)));
      return out;
    }
    return Array.from(vec);
  });
}

function toChunk(columns) {
  const chunk = duckdb.DuckDBDataChunk.create(TYPES, columns[0].length);
  chunk.setColumns(columns);
  return chunk;
}

function removeDatabase(file) {
  for (const f of [file, `${file}.wal`]) fs.rmSync(f, {force: true});
}

class DuckEngine {
  constructor(dir, dataDir, sync) {
    this.dir = dir;
    this.file = path.join(dir, DB_FILE);
    this.inputs = new Inputs(dataDir);
    this.sync = sync;
    this.instance = null;
    this.conn = null;
    this.appender = null;
    this.info = null;  // DuckDB settings read at open
  }

  #config() { return this.sync === 'commit' ? {checkpoint_threshold: NO_AUTO_CHECKPOINT} : {}; }

  // The statement that makes one write durable beyond the commit itself (none in commit mode).
  #syncSql(concurrent) {
    if (this.sync === 'commit') return null;
    // A plain CHECKPOINT fails while another connection has a write transaction open; FORCE
    // CHECKPOINT waits for them instead.
    return concurrent ? 'FORCE CHECKPOINT' : 'CHECKPOINT';
  }

  describe() {
    const syncText = this.sync === 'commit' ?
        'commit only (autocommit; DuckDB fsyncs its WAL on every commit), automatic ' +
            `checkpoints off (checkpoint_threshold=${NO_AUTO_CHECKPOINT}: each checkpoint ` +
            "rewrites the key's ART index, O(table))" :
        'CHECKPOINT after every batch / put (FORCE CHECKPOINT with concurrent writers)';
    const info = this.info ?
        `threads=${this.info.threads}, memory_limit=${this.info.memory_limit}, ` +
            `checkpoint_threshold=${this.info.checkpoint_threshold}` :
        `threads=${os.availableParallelism()} (default: cores), memory_limit=default (80% ` +
            'of RAM), checkpoint_threshold=' +
            (this.sync === 'commit' ? NO_AUTO_CHECKPOINT : 'default (16 MiB)');
    return {
      name: 'duckdb',
      durability: this.sync === 'commit' ? 'fsync of the WAL per commit (one per batch / put)' :
                                           'CHECKPOINT per batch',
      settings: `database file ${this.file}; table rows(${CREATE_COLUMNS}); ${info}; sync: ` +
          `${syncText}; W1 appender.appendDataChunk(256 rows) + flushSync() (one commit) per ` +
          'batch; W2 a database file of its own per run (deleted after), one connection per ' +
          'writer, prepared INSERT of one row per put; W3 SELECT columns WHERE predicate; W4 ' +
          'prepared SELECT ... WHERE id = $1 per id (ART index scan); W5 prepared SELECT ... ' +
          'WHERE id IN ($1..$512); W6 appender into a TEMP staging table, INSERT OR REPLACE ' +
          'INTO rows SELECT * FROM stage per 256-row batch, read back 512 ids per IN list; W7 ' +
          'CHECKPOINT (DuckDB VACUUM does not return space to the file system); W8 table ' +
          'vectors(id VARCHAR, vector FLOAT[dim]) loaded untimed, SELECT id ORDER BY ' +
          'array_distance(vector, $1::FLOAT[dim]), id LIMIT top_k (no index); W10 the ' +
          "suite's GROUP BY queries over rows (table name substituted), runAndReadAll per run",
      version:
          `@duckdb/node-api ${packageVersion('@duckdb/node-api')} (DuckDB ${duckdb.version()})`,
    };
  }

  async open() {
    fs.mkdirSync(this.dir, {recursive: true});
    this.inputs.rows;  // loads and checks rows.arrows (untimed)
    this.instance = await duckdb.DuckDBInstance.create(this.file, this.#config());
    this.conn = await this.instance.connect();
    await this.conn.run(`CREATE TABLE rows (${CREATE_COLUMNS})`);
    await this.conn.run('CHECKPOINT');
    const [row] = (await this.conn.runAndReadAll(
        "SELECT current_setting('threads'), current_setting('memory_limit'), " +
        "current_setting('checkpoint_threshold')")).getRowsJS();
    this.info = {threads: String(row[0]), memory_limit: row[1], checkpoint_threshold: row[2]};
    return {};
  }

  #requireOpen() {
    if (!this.conn) throw new Error('the engine is not open (send "open" first)');
  }

  async ingest() {
    this.#requireOpen();
    const stream = this.inputs.rows;
    const sync = this.#syncSql(false);
    const appender = await this.conn.createAppender('rows');
    const latencies = [];
    let bytes = 0;
    let seconds = 0;
    for (const batch of stream.batches) {
      const columns = toColumns(batch);  // input conversion, untimed
      bytes += logicalBytes(batch);
      const t0 = now();
      appender.appendDataChunk(toChunk(columns));
      appender.flushSync();
      if (sync) await this.conn.run(sync);
      const ms = now() - t0;
      latencies.push(ms * 1000);
      seconds += ms / 1000;
    }
    appender.closeSync();
    return {
      seconds, latencies_us: latencies, ops: stream.batches.length, rows: totalRows(stream), bytes,
      note: 'timed per batch: chunk build + append + commit' + (sync ? ` + ${sync}` : ''),
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
    const used = rows.slice(0, writers * perWriter);
    const values = used.map((b) => toColumns(b).map((col) => col[0]));
    const done = new Array(writers).fill(0);
    const budgetMs = putsBudgetMs(this.inputs.params);
    const file = path.join(this.dir, `puts-${writers}.duckdb`);
    removeDatabase(file);
    const instance = await duckdb.DuckDBInstance.create(file, this.#config());
    const sync = this.#syncSql(writers > 1);
    const latencies = [];
    let seconds;
    try {
      const setup = await instance.connect();
      await setup.run(`CREATE TABLE rows (${CREATE_COLUMNS})`);
      await setup.run('CHECKPOINT');
      setup.closeSync();
      const conns = [];
      const inserts = [];
      for (let w = 0; w < writers; w++) {
        const c = await instance.connect();
        conns.push(c);
        inserts.push(await c.prepare(
            `INSERT INTO rows VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`));
      }
      const writer = async (w) => {
        for (let i = w * perWriter; i < (w + 1) * perWriter && now() - start < budgetMs; i++) {
          const t0 = now();
          inserts[w].bind(values[i], TYPES);
          await inserts[w].run();
          if (sync) await conns[w].run(sync);
          latencies.push((now() - t0) * 1000);
          done[w]++;
        }
      };
      const start = now();
      await Promise.all(Array.from({length: writers}, (_, w) => writer(w)));
      seconds = (now() - start) / 1000;
      for (const c of conns) c.closeSync();
    } finally {
      instance.closeSync();
      removeDatabase(file);  // keeps W7's bytes on disk about the rows table alone
    }
    const bytes = putBytes(used, perWriter, done);
    return {
      seconds, latencies_us: latencies, ops: latencies.length, rows: latencies.length, bytes,
      note: (writers === 1 ? 'one connection' : `${writers} connections on one database file`) +
          (sync ? `, ${sync} per put` : ''),
    };
  }

  async scan() {
    this.#requireOpen();
    const {predicate, columns} = this.inputs.params.scan;
    const start = now();
    const reader = await this.conn.runAndReadAll(
        `SELECT ${columns.join(', ')} FROM rows WHERE ${predicate}`);
    const cols = reader.getColumnsObjectJS();
    const seconds = (now() - start) / 1000;
    const rows = cols.id.map((id, i) => ({
      id, sequence_order: cols.sequence_order[i], reward: cols.reward[i],
    }));
    return {seconds, ops: 1, rows: rows.length, answer: scanAnswer(rows)};
  }

  async lookup() {
    this.#requireOpen();
    const ids = this.inputs.params.lookup_ids;
    const stmt = await this.conn.prepare('SELECT sequence_order FROM rows WHERE id = $1');
    const latencies = [];
    const found = new Map();
    const start = now();
    for (const id of ids) {
      const t0 = now();
      stmt.bindVarchar(1, id);
      const rows = (await stmt.runAndReadAll()).getRowsJS();
      latencies.push((now() - t0) * 1000);
      if (rows.length > 0) found.set(id, rows[0][0]);
    }
    const seconds = (now() - start) / 1000;
    stmt.destroySync();
    const lines = [];
    const count = lookupLines(ids, found, lines);
    return {
      seconds, latencies_us: latencies, ops: ids.length, rows: count,
      answer: {count, digest: digest(lines)},
    };
  }

  // A prepared "id IN ($1..$n)" per list length, reused across batches.
  async #readIds(statements, ids) {
    let stmt = statements.get(ids.length);
    if (!stmt) {
      stmt = await this.conn.prepare('SELECT id, sequence_order FROM rows WHERE id IN (' +
                                     ids.map((_, i) => `$${i + 1}`).join(', ') + ')');
      statements.set(ids.length, stmt);
    }
    for (let i = 0; i < ids.length; i++) stmt.bindVarchar(i + 1, ids[i]);
    const found = new Map();
    for (const [id, seq] of (await stmt.runAndReadAll()).getRowsJS()) found.set(id, seq);
    return found;
  }

  async getMany() {
    this.#requireOpen();
    const batches = this.inputs.params.get_many_ids;
    const statements = new Map();
    const latencies = [];
    const results = [];
    const start = now();
    for (const ids of batches) {
      const t0 = now();
      results.push(await this.#readIds(statements, ids));
      latencies.push((now() - t0) * 1000);
    }
    const seconds = (now() - start) / 1000;
    for (const s of statements.values()) s.destroySync();
    const lines = [];
    let count = 0;
    batches.forEach((ids, b) => { count += lookupLines(ids, results[b], lines); });
    return {
      seconds, latencies_us: latencies, ops: batches.length, rows: count,
      answer: {count, digest: digest(lines)},
    };
  }

  async overwrite() {
    this.#requireOpen();
    const stream = this.inputs.overwrite;
    const expected = overwriteExpectation(stream.batches);
    const sync = this.#syncSql(false);
    await this.conn.run(`CREATE OR REPLACE TEMP TABLE stage AS SELECT * FROM rows LIMIT 0`);
    const appender = await this.conn.createAppender('stage', 'main', 'temp');
    const latencies = [];
    let bytes = 0;
    let writeSeconds = 0;
    for (const batch of stream.batches) {
      const columns = toColumns(batch);  // input conversion, untimed
      bytes += logicalBytes(batch);
      const t0 = now();
      appender.appendDataChunk(toChunk(columns));
      appender.flushSync();
      await this.conn.run('INSERT OR REPLACE INTO rows SELECT * FROM stage');
      await this.conn.run('DELETE FROM stage');
      if (sync) await this.conn.run(sync);
      const ms = now() - t0;
      latencies.push(ms * 1000);
      writeSeconds += ms / 1000;
    }
    appender.closeSync();
    await this.conn.run('DROP TABLE temp.stage');
    const statements = new Map();
    const found = new Map();
    const t1 = now();
    for (let i = 0; i < expected.length; i += READ_CHUNK) {
      const ids = expected.slice(i, i + READ_CHUNK).map((e) => e.id);
      for (const [id, seq] of await this.#readIds(statements, ids)) found.set(id, seq);
    }
    const readSeconds = (now() - t1) / 1000;
    for (const s of statements.values()) s.destroySync();
    const [[total]] = (await this.conn.runAndReadAll('SELECT count(*) FROM rows')).getRowsJS();
    return {
      seconds: writeSeconds + readSeconds, latencies_us: latencies, ops: stream.batches.length,
      rows: expected.length, bytes, answer: overwriteAnswer(expected, found),
      total_rows: Number(total),
      note: `write ${writeSeconds.toFixed(2)} s + read back ${readSeconds.toFixed(2)} s`,
    };
  }

  async compact() {
    this.#requireOpen();
    const start = now();
    await this.conn.run('CHECKPOINT');
    const seconds = (now() - start) / 1000;
    return {
      seconds, ops: 1,
      note: 'CHECKPOINT folds the WAL into the database file (VACUUM would not shrink it)',
    };
  }

  // W10: each query as DuckDB runs it natively, over the rows table, sizes.sql_runs times in a
  // row; the result rows are read as JS values (count(*) is a BIGINT: a bigint) inside the
  // timed run. Every run must return what the first did.
  async sql() {
    this.#requireOpen();
    const spec = this.inputs.sql;
    const latencies = [];
    const results = [];
    for (let q = 0; q < spec.count; q++) {
      const text = spec.query(q, 'rows');
      let first = null;
      for (let run = 0; run < spec.runs; run++) {
        const t0 = now();
        const rows = (await this.conn.runAndReadAll(text)).getRowsJS();
        latencies.push((now() - t0) * 1000);
        const shown = JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
        if (first === null) {
          first = shown;
          results.push(rows);
        } else if (shown !== first) {
          throw new Error(`W10: run ${run + 1} of "${text}" returned other rows than its first`);
        }
      }
    }
    const seconds = latencies.reduce((a, b) => a + b, 0) / 1e6;
    const answer = sqlAnswer(results);
    return {
      seconds, latencies_us: latencies, ops: latencies.length, rows: answer.count, answer,
      note: 'runAndReadAll(sql).getRowsJS() per run over the rows table (full columnar scan, ' +
          'no index)',
    };
  }

  // W9: DuckDB's fts extension (BM25 via match_bm25) and its array distances could be joined
  // in SQL, but it has no hybrid search of its own to measure; the comparison is LanceDB's.
  hybrid() {
    return unsupported('no hybrid search of its own (the fts extension and array_distance ' +
                       'would have to be fused by hand in SQL)');
  }

  async vector() {
    this.#requireOpen();
    const {top_k: topK, vector_queries: nq} = this.inputs.params.sizes;
    const {ids, data, dim} = this.inputs.vectors;
    const queries = this.inputs.queries;
    const arrayType = duckdb.ARRAY(duckdb.FLOAT, dim);
    await this.#loadVectors(ids, data, dim, arrayType);
    const stmt = await this.conn.prepare(
        `SELECT id FROM vectors ORDER BY array_distance(vector, $1::FLOAT[${dim}]), id ` +
        `LIMIT ${topK}`);
    const latencies = [];
    const results = [];
    const start = now();
    for (let q = 0; q < nq; q++) {
      const t0 = now();
      stmt.bindArray(1, duckdb.arrayValue(Array.from(queries.subarray(q * dim, (q + 1) * dim))),
                     arrayType);
      const rows = (await stmt.runAndReadAll()).getRowsJS();
      latencies.push((now() - t0) * 1000);
      results.push(rows.map((r) => r[0]));
    }
    const seconds = (now() - start) / 1000;
    stmt.destroySync();
    return {
      seconds, latencies_us: latencies, ops: nq, rows: nq * topK, answer: vectorAnswer(results),
      note: `full scan over ${ids.length} x ${dim} FLOAT (no vector index)`,
    };
  }

  // The W8 table, appended untimed in chunks of 2048 rows (DuckDB's vector size).
  async #loadVectors(ids, data, dim, arrayType) {
    await this.conn.run(`CREATE OR REPLACE TABLE vectors (id VARCHAR, vector FLOAT[${dim}])`);
    const appender = await this.conn.createAppender('vectors');
    for (let i = 0; i < ids.length; i += 2048) {
      const n = Math.min(2048, ids.length - i);
      const vectors = new Array(n);
      for (let r = 0; r < n; r++) {
        vectors[r] = duckdb.arrayValue(Array.from(data.subarray((i + r) * dim, (i + r + 1) * dim)));
      }
      const chunk = duckdb.DuckDBDataChunk.create([duckdb.VARCHAR, arrayType], n);
      chunk.setColumns([ids.slice(i, i + n), vectors]);
      appender.appendDataChunk(chunk);
    }
    appender.flushSync();
    appender.closeSync();
    await this.conn.run('CHECKPOINT');
  }

  async close() {
    if (this.conn) {
      this.conn.closeSync();
      this.conn = null;
    }
    if (this.instance) {
      this.instance.closeSync();
      this.instance = null;
    }
    return {};
  }
}

export function makeEngine(variant, dir, dataDir, options = {}) {
  if (variant !== 'duckdb') throw new Error(`duckdb.mjs does not run engine "${variant}"`);
  const sync = options.duckdbSync ?? 'commit';
  if (sync !== 'checkpoint' && sync !== 'commit') {
    throw new Error(`--duckdb-sync must be "checkpoint" or "commit", got "${sync}"`);
  }
  return new DuckEngine(path.resolve(dir), dataDir, sync);
}
