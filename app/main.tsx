import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import './styles.css';
import { applyTheme, storedTheme } from './lib/theme';

// Before the first render, so a dark page never flashes light.
applyTheme(storedTheme(), false);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);

// Offline: the service worker (app/offline/sw.ts, built by vite-plugin-pwa) precaches the app shell and
// the bundled models. Registered relative to the page, so the site works under any sub-path.
if (import.meta.env.PROD && 'serviceWorker' in navigator) {
  addEventListener('load', () => {
    navigator.serviceWorker.register(new URL('sw.js', document.baseURI))
      .catch((e: unknown) => console.warn(`offline support unavailable: ${(e as Error).message}`));
  });
}
