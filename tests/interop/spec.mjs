// The interop data spec (README.md) in JS: the cases, the schema and the value of every cell.
// interop_spec.cc implements the same spec independently for strata; change both together.
import {
  Bool, Dictionary, Field, FixedSizeList, Float32, Float64, Int8, Int16, Int32, Int64,
  LargeBinary, LargeList, LargeUtf8, List, Schema, Struct, TimestampMicrosecond, Uint8, Uint16,
  Uint32, Uint64, Utf8, Binary,
} from 'apache-arrow';

export const CASES = [
  { name: 'basic', firstRow: 0, batches: [17, 0, 40, 3], compression: null },
  { name: 'lz4', firstRow: 100, batches: [50, 21], compression: 'lz4' },
  { name: 'zstd', firstRow: 200, batches: [64, 1], compression: 'zstd' },
  { name: 'sliced', firstRow: 5, batches: [13, 0, 31], compression: null, sliced: true },
  { name: 'empty', firstRow: 0, batches: [], compression: null },
  { name: 'align8', firstRow: 300, batches: [9, 33], compression: 'lz4' },
  { name: 'large_lz4', firstRow: 1000, batches: [20000], compression: 'lz4' },
  { name: 'large_zstd', firstRow: 50000, batches: [12000, 8000], compression: 'zstd' },
];

export const SCHEMA_METADATA = new Map([['interop.spec', '1'], ['note', 'ünïcödé ✓']]);
const SUFFIX = ['', 'é', '日本語', '🙂'];
const WORDS = ['red', 'green', 'blue', 'ünïcødé', ''];

function signed(bits) {
  const min = -(2n ** BigInt(bits - 1));
  const asType = bits === 64 ? (v) => v : Number;
  return (i) => {
    const special = [min, -min - 1n, 0n, -1n];
    return asType(i % 8 < 4 ? special[i % 8] : BigInt(((7 * i) % 200) - 100));
  };
}

function unsigned(bits) {
  const max = 2n ** BigInt(bits) - 1n;
  const asType = bits === 64 ? (v) => v : Number;
  return (i) => {
    const special = [0n, max, 1n, max - 1n];
    return asType(i % 8 < 4 ? special[i % 8] : BigInt((7 * i) % 200));
  };
}

function float(max, round) {
  return (i) => round([Infinity, -Infinity, NaN, max][i % 8] ?? (i - 10) / 3);
}

function bytes(n, byteAt) {
  return Uint8Array.from({ length: n }, (_, j) => byteAt(j));
}

function times(n, elementAt) {
  return Array.from({ length: n }, (_, j) => elementAt(j));
}

const FLT_MAX = 3.4028234663852886e38;
const item = (type, nullable = true) => new Field('item', type, nullable);
const xy = new Struct([new Field('x', new Int64(), true), new Field('y', new Bool(), true)]);

// [name, type, nullable, value(i) ignoring the column null rule, field metadata]
const COLUMNS = [
  ['b', new Bool(), true, (i) => i % 3 === 0],
  ['i8', new Int8(), true, signed(8)],
  ['i16', new Int16(), true, signed(16)],
  ['i32', new Int32(), false, signed(32)],
  ['i64', new Int64(), true, signed(64)],
  ['u8', new Uint8(), true, unsigned(8)],
  ['u16', new Uint16(), true, unsigned(16)],
  ['u32', new Uint32(), true, unsigned(32)],
  ['u64', new Uint64(), true, unsigned(64)],
  ['f32', new Float32(), true, float(FLT_MAX, Math.fround)],
  ['f64', new Float64(), true, float(Number.MAX_VALUE, (v) => v)],
  ['s', new Utf8(), true, (i) => (i % 11 === 5 ? '' : `s${i}${SUFFIX[i % 4]}`),
    new Map([['role', 'label']])],
  ['ls', new LargeUtf8(), true, (i) => `L${3 * i}${SUFFIX[(i + 1) % 4]}`],
  ['bin', new Binary(), true, (i) => bytes(i % 6, (j) => (31 * i + 17 * j) % 256)],
  ['lbin', new LargeBinary(), true, (i) => bytes(2 * (i % 4), (j) => (i + 101 * j) % 256)],
  ['ts', new TimestampMicrosecond(), true,
    (i) => BigInt(i % 2 === 0 ? 1 : -1) * (1700000000000000n + 1000003n * BigInt(i))],
  ['ts_tz', new TimestampMicrosecond('America/New_York'), true,
    (i) => 86400000000n * BigInt(i) + 123n],
  ['emb', new FixedSizeList(4, item(new Float32())), true,
    (i) => times(4, (j) => ((i + j) % 13 === 0 ? null : i + 0.5 * j))],
  ['li', new List(item(new Int32())), true,
    (i) => times(i % 4, (j) => ((i + j) % 5 === 4 ? null : 10 * i + j))],
  ['lls', new LargeList(item(new Utf8())), true, (i) => times(i % 3, (j) => `e${i}_${j}`)],
  ['st', new Struct([
    new Field('a', new Int32(), false),
    new Field('b', new Utf8(), true),
    new Field('c', new List(item(xy)), true),
  ]), true, (i) => ({
    a: 3 * i - 7,
    b: i % 4 === 1 ? null : `b${i}`,
    c: i % 5 === 2 ? null : times(i % 3, (j) => ((i + j) % 4 === 3 ? null
      : { x: BigInt(100 * i + j), y: j % 2 === 0 })),
  })],
  ['dict', new Dictionary(new Utf8(), new Int32()), true, (i) => WORDS[i % 5]],
  ['dict8', new Dictionary(new Utf8(), new Int8(), null, true), true, (i) => WORDS[(2 * i) % 5]],
];

export const schema = new Schema(
  COLUMNS.map(([name, type, nullable, , metadata]) => new Field(name, type, nullable, metadata)),
  SCHEMA_METADATA,
);

// The expected value of column k at global row i; null for a null cell.
export function cell(k, i) {
  const [, , nullable, value] = COLUMNS[k];
  return nullable && (i + k) % 7 === 0 ? null : value(i);
}

// Global row numbers of each batch of a case: [[first, count], ...].
export function batchRows(c) {
  let next = c.firstRow;
  return c.batches.map((n) => {
    const first = next;
    next += n;
    return [first, n];
  });
}
