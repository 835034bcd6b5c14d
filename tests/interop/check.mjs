// apache-arrow's side of the interop check (README.md):
//   node check.mjs read DIR    verify every case strata wrote to DIR against spec.mjs
//   node check.mjs write DIR   write every case apache-arrow can write, for strata to check
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CompressionType, Int64, RecordBatch, RecordBatchFileWriter, RecordBatchReader,
  RecordBatchStreamWriter, Struct, Type, compressionRegistry, makeData, vectorFromArray,
} from 'apache-arrow';
import lz4 from 'lz4js';
import { decompress as zstdDecompress } from 'fzstd';
import { CASES, batchRows, cell, schema } from './spec.mjs';

compressionRegistry.set(CompressionType.LZ4_FRAME, {
  encode: (bytes) => Uint8Array.from(lz4.compress(bytes)),
  decode: (bytes) => Uint8Array.from(lz4.decompress(bytes)),
});
// fzstd returns a view at byte offset 12, which 64-bit typed arrays cannot start at: copy.
compressionRegistry.set(CompressionType.ZSTD, { decode: (bytes) => zstdDecompress(bytes).slice() });

const FORMATS = [['arrows', RecordBatchStreamWriter], ['arrow', RecordBatchFileWriter]];
let failures = 0;

function fail(where, message) {
  failures += 1;
  console.error(`MISMATCH ${where}: ${message}`);
}

const show = (v) => (typeof v === 'bigint' ? `${v}n` : JSON.stringify(v, (_, x) =>
  (typeof x === 'bigint' ? `${x}n` : x instanceof Uint8Array ? [...x] : x)));

// ---- schema ----

function sameMetadata(a, b) {
  return show([...a.entries()]) === show([...b.entries()]);
}

// Field-by-field type comparison; returns a description of the first difference or null.
function typeDiff(want, got) {
  if (want.typeId !== got.typeId) return `type ${got} instead of ${want}`;
  const keys = {
    [Type.Int]: ['bitWidth', 'isSigned'],
    [Type.Float]: ['precision'],
    [Type.Timestamp]: ['unit', 'timezone'],
    [Type.FixedSizeList]: ['listSize'],
    [Type.Dictionary]: ['isOrdered'],
  }[want.typeId] ?? [];
  for (const key of keys) {
    if ((want[key] ?? null) !== (got[key] ?? null)) {
      return `${key} ${got[key]} instead of ${want[key]} in ${want}`;
    }
  }
  if (want.typeId === Type.Dictionary) {
    return typeDiff(want.indices, got.indices) ?? typeDiff(want.dictionary, got.dictionary);
  }
  return fieldsDiff(want.children ?? [], got.children ?? []);
}

function fieldsDiff(want, got) {
  if (want.length !== got.length) return `${got.length} fields instead of ${want.length}`;
  for (let k = 0; k < want.length; k++) {
    const [w, g] = [want[k], got[k]];
    const diff = w.name !== g.name ? `name ${g.name}`
      : w.nullable !== g.nullable ? `nullable ${g.nullable}`
      : !sameMetadata(w.metadata, g.metadata) ? `metadata ${show([...g.metadata])}`
      : typeDiff(w.type, g.type);
    if (diff) return `field ${k} (${w.name}): ${diff}`;
  }
  return null;
}

// ---- values ----

function sameBytes(a, b) {
  return a instanceof Uint8Array && a.length === b.length && a.every((x, j) => x === b[j]);
}

// Compares what apache-arrow decoded (got) with the spec value (want) of type `type`.
function valueDiff(type, want, got) {
  if (want === null || got === null) return want === got ? null : `${show(got)} != ${show(want)}`;
  switch (type.typeId) {
    case Type.Float:
      return Object.is(want, got) ? null : `${got} != ${want}`;
    case Type.Binary:
    case Type.LargeBinary:
      return sameBytes(want, got) ? null : `${show(got)} != ${show(want)}`;
    case Type.List:
    case Type.LargeList:
    case Type.FixedSizeList: {
      if (got.length !== want.length) return `list length ${got.length} != ${want.length}`;
      for (let j = 0; j < want.length; j++) {
        const diff = valueDiff(type.children[0].type, want[j], got.get(j));
        if (diff) return `[${j}] ${diff}`;
      }
      return null;
    }
    case Type.Struct:
      for (const f of type.children) {
        const diff = valueDiff(f.type, want[f.name], got[f.name]);
        if (diff) return `.${f.name} ${diff}`;
      }
      return null;
    case Type.Dictionary:
      return valueDiff(type.dictionary, want, got);
    default:
      return want === got ? null : `${show(got)} != ${show(want)}`;
  }
}

// The value at `row` of a column, as the spec writes it. Timestamps are read raw: get()
// turns microseconds into fractional milliseconds.
function readCell(column, row) {
  if (!column.isValid(row)) return null;
  if (column.type.typeId !== Type.Timestamp) return column.get(row);
  const [data] = column.data;
  return data.values[data.offset + row];
}

function checkFile(dir, c, ext) {
  const where = `${c.name}.${ext}`;
  let reader;
  try {
    reader = RecordBatchReader.from(readFileSync(join(dir, where))).open();
  } catch (e) {
    return fail(where, `apache-arrow cannot open it: ${e.message}`);
  }
  if (reader.isFile() !== (ext === 'arrow')) fail(where, 'wrong IPC format (stream vs file)');
  const schemaDiff = fieldsDiff(schema.fields, reader.schema.fields);
  if (schemaDiff) fail(where, `schema: ${schemaDiff}`);
  if (!sameMetadata(schema.metadata, reader.schema.metadata)) {
    fail(where, `schema metadata ${show([...reader.schema.metadata])}`);
  }
  let batches;
  try {
    // A reader of a file without batches yields one placeholder batch of no rows.
    batches = [...reader].filter((b) => b.constructor.name !== '_InternalEmptyPlaceholderRecordBatch');
  } catch (e) {
    return fail(where, `apache-arrow cannot read a batch: ${e.message}`);
  }
  const rows = batchRows(c);
  if (batches.length !== rows.length) {
    return fail(where, `${batches.length} batches instead of ${rows.length}`);
  }
  rows.forEach(([first, count], b) => {
    if (batches[b].numRows !== count) {
      return fail(where, `batch ${b}: ${batches[b].numRows} rows instead of ${count}`);
    }
    schema.fields.forEach((f, k) => {
      const column = batches[b].getChildAt(k);
      for (let r = 0; r < count; r++) {
        let diff;
        try {
          diff = valueDiff(f.type, cell(k, first + r), readCell(column, r));
        } catch (e) {
          diff = `cannot read: ${e.message}`;
        }
        if (diff) return fail(where, `batch ${b} column ${f.name} row ${first + r}: ${diff}`);
      }
    });
  });
}

function read(dir) {
  for (const c of CASES) for (const [ext] of FORMATS) checkFile(dir, c, ext);
}

// ---- writing ----

// Column k over global rows [first, first + count) as one Data chunk.
function buildColumn(k, first, count) {
  const { type } = schema.fields[k];
  const values = Array.from({ length: count }, (_, r) => cell(k, first + r));
  if (type.typeId !== Type.Timestamp) return vectorFromArray(values, type).data[0];
  const ints = vectorFromArray(values, new Int64()).data[0];
  return makeData({ ...ints, type, data: ints.values, nullBitmap: ints.nullBitmap });
}

function buildBatch(first, count) {
  const children = schema.fields.map((_, k) => buildColumn(k, first, count));
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: count,
    children }));
}

// The batches of a case. For a file: slices of one batch over all rows (from row 0 for a
// sliced case), so they share dictionaries, as the file format requires. For a stream of an
// unsliced case: batches built one by one, so each batch replaces the dictionaries.
function caseBatches(c, ext) {
  const rows = batchRows(c);
  if (ext === 'arrows' && !c.sliced) return rows.map(([first, count]) => buildBatch(first, count));
  const start = c.sliced ? 0 : c.firstRow;
  const end = c.firstRow + c.batches.reduce((a, b) => a + b, 0) + (c.sliced ? 7 : 0);
  const whole = buildBatch(start, end - start);
  return rows.map(([first, count]) => whole.slice(first - start, first - start + count));
}

// apache-arrow 21.2.0 writes compressed bodies that no other implementation can read: the
// 8-byte prefix of each buffer holds the compressed length, not the uncompressed one
// (apache/arrow-js#470, fixed after 21.2.0; Arrow C++ and strata reject such files). Until
// the pinned version has the fix, JS writes every case uncompressed — and no zstd case, as
// fzstd cannot encode.
const JS_WRITES_COMPRESSED = false;

function write(dir) {
  mkdirSync(dir, { recursive: true });
  for (const c of CASES) {
    if (c.compression === 'zstd') continue;
    const compressionType = c.compression === 'lz4' && JS_WRITES_COMPRESSED
      ? CompressionType.LZ4_FRAME : null;
    for (const [ext, Writer] of FORMATS) {
      const writer = new Writer({ compressionType });
      writer.reset(undefined, schema);
      for (const batch of caseBatches(c, ext)) writer.write(batch);
      writer.finish();
      writeFileSync(join(dir, `${c.name}.${ext}`), writer.toUint8Array(true));
    }
  }
  console.log(`wrote ${dir}`);
}

const [command, dir] = process.argv.slice(2);
if (command === 'read' && dir) read(dir);
else if (command === 'write' && dir) write(dir);
else {
  console.error('usage: node check.mjs read|write DIR');
  process.exit(2);
}
if (failures) {
  console.error(`${failures} mismatches`);
  process.exit(1);
}
if (command === 'read') console.log(`apache-arrow read every strata file in ${dir}: all match`);
