/**
 * Light and dark theme: the user's choice ('auto' follows the system's prefers-color-scheme) is kept
 * in local storage and applied as `data-theme="light|dark"` on <html>, which styles.css reads.
 * Figures (charts, heatmaps, colour legends) stay on light "paper" plates in both themes, so the
 * colour-blind-safe ColorBrewer scales keep their light neutral and the exports stay printable.
 */

/** What the user picked. */
export type ThemeChoice = 'auto' | 'light' | 'dark';
/** Local-storage key of the choice. */
export const THEME_KEY = 'branchpoint.theme';

/** The stored choice; 'auto' when none or unreadable. */
export function storedTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(THEME_KEY);
    return v === 'light' || v === 'dark' ? v : 'auto';
  } catch {
    return 'auto';
  }
}

const dark = () => typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches;

/** The theme a choice shows now ('auto' resolved by prefers-color-scheme). */
export function effectiveTheme(choice: ThemeChoice): 'light' | 'dark' {
  return choice === 'auto' ? (dark() ? 'dark' : 'light') : choice;
}

let unfollow: (() => void) | null = null;

/** Applies and stores a choice; with 'auto', follows later changes of the system setting. */
export function applyTheme(choice: ThemeChoice, store = true): void {
  const root = document.documentElement;
  root.dataset.theme = effectiveTheme(choice);
  root.dataset.themeChoice = choice;
  unfollow?.();
  unfollow = null;
  if (choice === 'auto' && typeof matchMedia === 'function') {
    const mq = matchMedia('(prefers-color-scheme: dark)');
    const on = () => { root.dataset.theme = mq.matches ? 'dark' : 'light'; };
    mq.addEventListener('change', on);
    unfollow = () => mq.removeEventListener('change', on);
  }
  if (store) {
    try {
      if (choice === 'auto') localStorage.removeItem(THEME_KEY); else localStorage.setItem(THEME_KEY, choice);
    } catch { /* storage disabled: the choice lasts for this page */ }
  }
}
