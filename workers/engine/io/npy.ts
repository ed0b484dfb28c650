/**
 * NumPy `.npy` writing (format 1.0, https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
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
