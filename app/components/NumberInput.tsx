import { useState } from 'react';

/** A number input that keeps what is typed while it is not a number yet ("-", "0."). */
export function NumberInput({ value, onChange, testId, label, min, integer, placeholder }: { value: number | null; onChange: (v: number | null) => void; testId: string; label: string; min?: number; integer?: boolean; placeholder?: string }) {
  const [text, setText] = useState<string | null>(null);
  const shown = text ?? (value === null ? '' : String(value));
  return (
    <input
      type="text" inputMode="decimal" className="short" aria-label={label} data-testid={testId} value={shown}
      onChange={(e) => {
        const t = e.target.value;
        setText(t);
        if (t.trim() === '') return onChange(null);
        const v = Number(t.replace('−', '-'));
        if (Number.isFinite(v) && (!integer || Number.isInteger(v)) && (min === undefined || v >= min)) onChange(v);
      }}
      onBlur={() => setText(null)}
      placeholder={placeholder}
    />
  );
}
