// Byte counts as people read them (memory estimates, downloads, the UI's storage lines).

/** Bytes in binary units: "512 B", "1.5 KiB", "9.8 GiB", "1 GiB". */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return 'unlimited';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let u = 0;
  while (n >= 1024 && u < units.length - 1) { n /= 1024; u++; }
  const s = u === 0 ? String(Math.round(n)) : n.toFixed(1).replace(/\.0$/, '');
  return `${s} ${units[u]}`;
}
