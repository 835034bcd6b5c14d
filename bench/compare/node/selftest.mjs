// Self-test of the Node peers: writes a small data set (make-test-data.mjs), runs every op on
// lancedb, lancedb-lsm and duckdb through peer.mjs over the JSON-lines protocol, and fails
// (exit 1) unless lancedb and duckdb give identical W3-W6 and W8 answers and duckdb's W10
// answer equals the one aggregated here from rows.arrows.
//
//   node selftest.mjs [--rows 5000] [--vectors 2000] [--dim 64] [--keep]
import {spawn, spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import {fileURLToPath} from 'node:url';

import {readRowStream, sqlAnswer} from './common.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OPS = [
  {op: 'describe'}, {op: 'open'}, {op: 'ingest'}, {op: 'puts', writers: 1},
  {op: 'puts', writers: 8}, {op: 'scan'}, {op: 'lookup'}, {op: 'get_many'}, {op: 'overwrite'},
  {op: 'compact'}, {op: 'vector'}, {op: 'sql'}, {op: 'close'},
];
const COMPARED = ['scan', 'lookup', 'get_many', 'overwrite', 'vector'];

function parseArgs(argv) {
  const opts = {rows: 5000, vectors: 2000, dim: 64, keep: false};
  for (let i = 2; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (key === 'keep') {
      opts.keep = true;
    } else if (key in opts && i + 1 < argv.length) {
      opts[key] = Number(argv[++i]);
    } else {
      throw new Error(`bad argument ${argv[i]}`);
    }
  }
  return opts;
}

// Runs one peer through every op; returns {opName: response}.
async function runPeer(engine, dir, data) {
  const child = spawn(process.execPath, [path.join(HERE, 'peer.mjs'), '--engine', engine, '--dir',
                                         dir, '--data', data],
                      {stdio: ['pipe', 'pipe', 'pipe']});
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const lines = readline.createInterface({input: child.stdout})[Symbol.asyncIterator]();
  const responses = {};
  for (const req of OPS) {
    child.stdin.write(JSON.stringify(req) + '\n');
    const {value, done} = await lines.next();
    if (done) throw new Error(`${engine}: peer exited before answering ${req.op}:\n${stderr}`);
    const key = req.op === 'puts' ? `puts${req.writers}` : req.op;
    responses[key] = JSON.parse(value);
  }
  child.stdin.end();
  const code = await new Promise((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`${engine}: peer exited with ${code}:\n${stderr}`);
  return responses;
}

// W10's answer aggregated from the rows (the queries of make-test-data.mjs's params.json):
// Q1 count per (policy_version, role), Q2 count and max rollout_id per role of reward > 0.5,
// each ordered by its keys. W6 keeps these columns, so the answer holds after it.
function expectedSql(rowsFile) {
  const q1 = new Map();
  const q2 = new Map();
  for (const b of readRowStream(rowsFile).batches) {
    const [pv, role, reward, rollout] =
        ['policy_version', 'role', 'reward', 'rollout_id'].map((c) => b.getChild(c));
    for (let i = 0; i < b.numRows; i++) {
      const key = `${pv.get(i)}\t${role.get(i)}`;
      q1.set(key, (q1.get(key) ?? 0) + 1);
      if (reward.get(i) > 0.5) {
        const f = q2.get(role.get(i)) ?? {count: 0, max: ''};
        f.count++;
        if (rollout.get(i) > f.max) f.max = rollout.get(i);
        q2.set(role.get(i), f);
      }
    }
  }
  const byKey = (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  return sqlAnswer([
    [...q1].sort(byKey).map(([key, n]) => [...key.split('\t'), n]),
    [...q2].sort(byKey).map(([r, f]) => [r, f.count, f.max]),
  ]);
}

function summary(engine, r) {
  const cell = (x) => {
    if (!x.ok) return 'ERROR';
    if (x.supported === false) return 'n/a';
    return `${x.seconds.toFixed(3)}s`;
  };
  return `${engine.padEnd(12)} ` + ['ingest', 'puts1', 'puts8', 'scan', 'lookup', 'get_many',
                                     'overwrite', 'compact', 'vector', 'sql']
                                        .map((k) => `${k}=${cell(r[k])}`).join(' ');
}

async function main() {
  const opts = parseArgs(process.argv);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-node-peers-'));
  const data = path.join(root, 'data');
  const failures = [];
  try {
    const gen = spawnSync(process.execPath, [path.join(HERE, 'make-test-data.mjs'), '--out', data,
                                             '--rows', String(opts.rows), '--vectors',
                                             String(opts.vectors), '--dim', String(opts.dim)],
                          {stdio: 'inherit'});
    if (gen.status !== 0) throw new Error('make-test-data.mjs failed');
    const params = JSON.parse(fs.readFileSync(path.join(data, 'params.json'), 'utf8'));
    const results = {};
    for (const engine of ['lancedb', 'lancedb-lsm', 'duckdb']) {
      results[engine] = await runPeer(engine, path.join(root, engine), data);
      console.log(summary(engine, results[engine]));
    }
    for (const [engine, r] of Object.entries(results)) {
      for (const [op, resp] of Object.entries(r)) {
        if (!resp.ok) failures.push(`${engine} ${op}: ${resp.error}`);
      }
      if (r.ingest.ok && r.ingest.rows !== params.sizes.rows) {
        failures.push(`${engine} ingest: rows ${r.ingest.rows}, expected ${params.sizes.rows}`);
      }
    }
    const lance = results.lancedb;
    const duck = results.duckdb;
    for (const op of COMPARED) {
      const a = lance[op].answer;
      const b = duck[op].answer;
      if (!a || !b || a.count !== b.count || a.digest !== b.digest) {
        failures.push(`${op}: answers differ: lancedb ${JSON.stringify(a)}, duckdb ` +
                      `${JSON.stringify(b)}`);
      }
    }
    for (const [engine, r] of [['lancedb', lance], ['duckdb', duck]]) {
      const o = r.overwrite;
      const wantRows = params.sizes.rows;
      if (o.ok && (o.total_rows !== wantRows || o.answer.count !== params.overwrite_rows)) {
        failures.push(`${engine} overwrite: total_rows ${o.total_rows} (want ` +
                      `${params.sizes.rows}), read back new ${o.answer.count} (want ` +
                      `${params.overwrite_rows})`);
      }
      const misses = params.lookup_ids.length - r.lookup.answer?.count;
      if (r.lookup.ok && misses !== Math.floor(params.lookup_ids.length / 10)) {
        failures.push(`${engine} lookup: ${misses} misses, the data set has ` +
                      `${Math.floor(params.lookup_ids.length / 10)}`);
      }
    }
    const sqlWant = expectedSql(path.join(data, 'rows.arrows'));
    const sqlGot = duck.sql.answer;
    if (!sqlGot || sqlGot.count !== sqlWant.count || sqlGot.digest !== sqlWant.digest) {
      failures.push(`duckdb sql: answer ${JSON.stringify(sqlGot)}, the rows give ` +
                    `${JSON.stringify(sqlWant)}`);
    }
    for (const engine of ['lancedb', 'lancedb-lsm']) {
      if (results[engine].sql.supported !== false) {
        failures.push(`${engine} sql: expected supported:false`);
      }
    }
    for (const op of COMPARED) {
      if (results['lancedb-lsm'][op].supported !== false) {
        failures.push(`lancedb-lsm ${op}: expected supported:false`);
      }
    }
  } finally {
    if (opts.keep) {
      console.log(`kept ${root}`);
    } else {
      fs.rmSync(root, {recursive: true, force: true});
    }
  }
  if (failures.length) {
    console.error(`selftest FAILED:\n  ${failures.join('\n  ')}`);
    process.exit(1);
  }
  console.log('selftest passed: lancedb and duckdb agree on W3-W6 and W8, duckdb W10 matches ' +
              'the rows');
}

main().catch((e) => {
  console.error(`selftest FAILED: ${e.stack || e}`);
  process.exit(1);
});
