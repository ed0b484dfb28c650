/**
 * NumPy `.npy` reading (format 1.0–3.0) and writing (format 1.0, https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
 * float32 little-endian ('<f4'), C order, any shape; readable by `numpy.load` and `torch.from_numpy`.
 */

const NPY_MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

/**
 * A .npy 1.0 file of `data` with `shape` (row-major: the last axis varies fastest), its header padded
 * with spaces to a multiple of 64 bytes and ended by '\n', as numpy writes it.
 * @param data float32 values, length = product of `shape`
 * @param shape e.g. [n_layers, n_tokens, d_model] for a stack of blocks.{l}.hook_resid_post
 * @throws Error when the shape's product is not data.length, or a dimension is not a non-negative integer
 */
export function writeNpyArray(data: Float32Array, shape: readonly number[]): Uint8Array {
  if (shape.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`.npy shape must be non-negative integers, got (${shape.join(', ')})`);
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== data.length) throw new Error(`.npy shape (${shape.join(', ')}) holds ${n} values, but ${data.length} were given`);
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims}), }`;
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header.padEnd(total - 10 - 1, ' ') + '\n';
  const out = new Uint8Array(total + 4 * data.length);
  out.set(NPY_MAGIC, 0);
  out[6] = 1;
  out[7] = 0;
  const dv = new DataView(out.buffer);
  dv.setUint16(8, header.length, true);
  for (let i = 0; i < header.length; i++) out[10 + i] = header.charCodeAt(i);
  for (let i = 0; i < data.length; i++) dv.setFloat32(total + 4 * i, data[i], true);
  return out;
}

/**
 * Parses a .npy array of any shape, C order (NumPy format 1.0–3.0), float32 or float64 of
 * either byte order, into float32. Also reads the arrays inside an .npz (sae/npz.ts).
 * @param what how messages name the content ("vector", "array").
 * @returns the values [product(shape)] and the shape.
 * @throws Error naming the file for a bad magic or header, an unsupported dtype, a Fortran-order
 *   array of more than one dimension, or truncated data.
 */
export function readNpyArray(bytes: Uint8Array, name = 'array.npy', what = 'array'): { data: Float32Array; shape: number[] } {
  if (bytes.length < 10 || NPY_MAGIC.some((b, i) => bytes[i] !== b)) throw new Error(`${name}: not a .npy file (no \\x93NUMPY magic)`);
  const major = bytes[6];
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let hlen: number, start: number;
  if (major !== 1 && major !== 2 && major !== 3) throw new Error(`${name}: .npy format version ${major} is not supported (1, 2 and 3 are)`);
  start = major === 1 ? 10 : 12;
  if (bytes.length < start) throw new Error(`${name}: the file is ${bytes.length} bytes, too short for a .npy version ${major} header length (${start} bytes; truncated)`);
  if (major === 1) hlen = dv.getUint16(8, true);
  else hlen = dv.getUint32(8, true);
  if (start + hlen > bytes.length) throw new Error(`${name}: header runs past the end of the file (truncated)`);
  const header = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(bytes.subarray(start, start + hlen));
  const descr = /'descr'\s*:\s*'([<>|=]?)([a-zA-Z]\d*)'/.exec(header);
  const shapeM = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  if (!descr || !shapeM || !fortran) throw new Error(`${name}: malformed .npy header (expected a dict with 'descr', 'fortran_order' and 'shape')`);
  const [, order, type] = descr;
  if (type !== 'f4' && type !== 'f8') throw new Error(`${name}: dtype ${order}${type} is not supported; save the ${what} as float32 or float64`);
  const shape = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  if (shape.some((d) => !Number.isSafeInteger(d) || d < 0)) throw new Error(`${name}: shape ${shapeText} is not a list of sizes`);
  // Fortran order lays out an array with at most one dimension > 1 exactly as C order does.
  if (fortran[1] === 'True' && shape.filter((d) => d > 1).length > 1) throw new Error(`${name}: shape ${shapeText} is stored in Fortran order; save it with numpy.ascontiguousarray`);
  const count = shape.reduce((a, b) => a * b, 1);
  const size = type === 'f4' ? 4 : 8;
  const data = start + hlen;
  if (bytes.length - data < count * size) throw new Error(`${name}: shape ${shapeText} needs ${count * size} data bytes but the file has ${bytes.length - data} (truncated)`);
  const little = order !== '>';
  const out = new Float32Array(count);
  if (size === 4 && little && (bytes.byteOffset + data) % 4 === 0) out.set(new Float32Array(bytes.buffer, bytes.byteOffset + data, count));
  else for (let i = 0; i < count; i++) out[i] = size === 4 ? dv.getFloat32(data + 4 * i, little) : dv.getFloat64(data + 8 * i, little);
  return { data: out, shape };
}
