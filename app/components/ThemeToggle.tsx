import { useState } from 'react';
import { applyTheme, storedTheme, type ThemeChoice } from '../lib/theme';

/** The theme control in the header: Auto (the system's setting), Light or Dark; remembered in this browser. */
export function ThemeToggle() {
  const [choice, setChoice] = useState<ThemeChoice>(storedTheme);
  return (
    <label className="theme-toggle" title="Figures stay on light paper in both themes, and exports are always printable">Theme
      <select data-testid="theme" value={choice} onChange={(e) => { const c = e.target.value as ThemeChoice; setChoice(c); applyTheme(c); }}>
        <option value="auto">auto (system)</option>
        <option value="light">light</option>
        <option value="dark">dark</option>
      </select>
    </label>
  );
}
