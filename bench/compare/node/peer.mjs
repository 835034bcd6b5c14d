// The Node side of bench/compare: LanceDB or DuckDB behind the JSON-lines protocol in
// bench/compare/README.md. One response line per request on stdout; logs go to stderr.
//
//   node peer.mjs --engine lancedb|lancedb-lsm|duckdb --dir ENGINE_DIR --data DATA_DIR
//                 [--duckdb-sync checkpoint|commit]   (duckdb.mjs explains the two modes)
import readline from 'node:readline';

// Libraries that log with console.log must not corrupt the protocol stream.
console.log = console.error;
console.info = console.error;

const ENGINES = {
  'lancedb': {module: './lancedb.mjs', package: '@lancedb/lancedb'},
  'lancedb-lsm': {module: './lancedb.mjs', package: '@lancedb/lancedb'},
  'duckdb': {module: './duckdb.mjs', package: '@duckdb/node-api'},
};

function parseArgs(argv) {
  const opts = {};
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i];
    if (!['--engine', '--dir', '--data', '--duckdb-sync'].includes(key) || i + 1 >= argv.length) {
      throw new Error(`unknown or incomplete argument "${key}"; usage: node peer.mjs ` +
                      '--engine lancedb|lancedb-lsm|duckdb --dir ENGINE_DIR --data DATA_DIR ' +
                      '[--duckdb-sync checkpoint|commit]');
    }
    opts[key.slice(2)] = argv[i + 1];
  }
  for (const key of ['engine', 'dir', 'data']) {
    if (!opts[key]) throw new Error(`--${key} is required`);
  }
  if (!(opts.engine in ENGINES)) {
    throw new Error(`unknown engine "${opts.engine}" (lancedb, lancedb-lsm, duckdb)`);
  }
  return opts;
}

function write(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }

function errorText(e) {
  if (e instanceof Error) return e.message || String(e);
  return String(e);
}

// Turns "Cannot find package 'x'" into the message the driver shows.
function importError(e, fallbackPackage) {
  const text = errorText(e);
  if (e && (e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND')) {
    const m = /Cannot find (?:package|module) '([^']+)'/.exec(text);
    const pkg = m && !m[1].startsWith('/') && !m[1].startsWith('.') ? m[1] : fallbackPackage;
    return `${pkg} is not installed: run bench/compare/node/install`;
  }
  return `loading ${fallbackPackage} failed: ${text}`;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv);
  } catch (e) {
    console.error(`peer.mjs: ${errorText(e)}`);
    process.exit(2);
  }
  const spec = ENGINES[opts.engine];
  let engine = null;
  let loadError = null;
  try {
    const mod = await import(spec.module);
    engine = mod.makeEngine(opts.engine, opts.dir, opts.data,
                            {duckdbSync: opts['duckdb-sync']});
  } catch (e) {
    loadError = importError(e, spec.package);
    console.error(`peer.mjs: ${loadError}`);
  }

  const ops = {
    describe: () => engine.describe(),
    open: () => engine.open(),
    ingest: () => engine.ingest(),
    puts: (req) => {
      const writers = Number(req.writers);
      if (!Number.isInteger(writers) || writers < 1) {
        throw new Error(`puts: "writers" must be a positive integer, got ${req.writers}`);
      }
      return engine.puts(writers);
    },
    scan: () => engine.scan(),
    lookup: () => engine.lookup(),
    get_many: () => engine.getMany(),
    overwrite: () => engine.overwrite(),
    compact: () => engine.compact(),
    vector: () => engine.vector(),
    hybrid: () => engine.hybrid(),
    sql: () => engine.sql(),
    close: () => (engine ? engine.close() : {}),
  };

  const rl = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
  let closed = false;
  for await (const line of rl) {
    if (!line.trim()) continue;
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      write({ok: false, error: `request is not JSON: ${errorText(e)}: ${line.slice(0, 200)}`});
      continue;
    }
    const op = ops[req.op];
    if (!op) {
      write({ok: false, error: `unknown op "${req.op}"`});
      continue;
    }
    if (loadError && req.op !== 'close') {
      write({ok: false, error: loadError});
      continue;
    }
    try {
      const started = performance.now();
      const result = await op(req);
      console.error(`peer.mjs[${opts.engine}]: ${req.op} done in ` +
                    `${((performance.now() - started) / 1000).toFixed(2)} s`);
      write({ok: true, ...result});
    } catch (e) {
      console.error(`peer.mjs[${opts.engine}]: ${req.op} failed:`, e);
      write({ok: false, error: `${req.op}: ${errorText(e)}`});
    }
    if (req.op === 'close') {
      closed = true;
      break;
    }
  }
  if (!closed && engine) {
    try {
      await engine.close();
    } catch (e) {
      console.error(`peer.mjs: close at end of input failed: ${errorText(e)}`);
    }
  }
  // Exit once stdout has drained; native thread pools would otherwise keep the process alive.
  process.stdout.write('', () => process.exit(0));
}

process.on('unhandledRejection', (e) => {
  console.error('peer.mjs: unhandled rejection:', e);
});

main().catch((e) => {
  console.error('peer.mjs: fatal:', e);
  write({ok: false, error: `peer crashed: ${errorText(e)}`});
  process.stdout.write('', () => process.exit(1));
});
