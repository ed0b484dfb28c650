import { useRef } from 'react';

/**
 * A button that opens the browser's file picker (a hidden file input, reset after each pick so the
 * same file can be picked again) and hands the picked file to `onFile`. The input carries `testId`
 * (tests set files on it).
 */
export function FilePickButton({ label, accept, testId, disabled, onFile }: { label: string; accept: string; testId: string; disabled?: boolean; onFile: (f: File) => void }) {
  const input = useRef<HTMLInputElement | null>(null);
  return (
    <>
      <button type="button" onClick={() => input.current?.click()} disabled={disabled}>{label}</button>
      <input ref={input} type="file" hidden accept={accept} data-testid={testId} aria-label={label}
        onChange={(e) => { const f = e.target.files?.[0]; e.target.value = ''; if (f) onFile(f); }} />
    </>
  );
}
