import { useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import QRCode from 'qrcode';
import { useStore } from '../store';
import type { Deck, Experiment } from '../../workers/shared';
import { deckLink, experimentLink, fetchDeck, holdForPoster, holdPosterResults, posterOwnLink, releasePosterHold, restoreExperiment, STORAGE_KEY } from '../actions/experiment';
import { refreshOwnSlide } from '../actions/poster_slide';

/** Idle time after which a kiosk goes back to the deck's first experiment (ms). */
const KIOSK_IDLE_MS = 3 * 60_000;

/** The deck shipped with the app, or null with the reason. */
async function loadDeck(): Promise<{ deck: Deck | null; problem: string | null }> {
  try {
    return { deck: await fetchDeck(), problem: null };
  } catch (e) {
    return { deck: null, problem: (e as Error).message };
  }
}

/** Longest link put in a QR code as is (a denser code scans badly from a poster); a longer deck slide's link is its short `#deck=n`. */
const QR_MAX = 300;

/**
 * A QR code of `text` as an SVG string (qrcode library): error correction L (7 % of the code may be
 * damaged; a screen or a printed poster is clean, and L gives the sparsest code that a phone reads
 * from a distance); '' when the text does not fit (over ~2.9 kB).
 */
function useQr(text: string): string {
  const [svg, setSvg] = useState('');
  useEffect(() => {
    let live = true;
    QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'L', margin: 1 }).then((s) => { if (live) setSvg(s); }, () => { if (live) setSvg(''); });
    return () => { live = false; };
  }, [text]);
  return svg;
}

/** Asks for full screen; call it only from the click that opens poster mode (browsers refuse it without a user gesture). */
export function enterPosterFullscreen(): void {
  void document.documentElement.requestFullscreen?.().catch(() => { /* refused: the overlay still fills the window */ });
}

export interface PosterModeProps {
  /** The view to show large (App's active view). */
  children: ReactNode;
  /** Start on the deck (kiosk) rather than on the experiment open now. */
  kiosk: boolean;
  onExit: () => void;
}

/**
 * Poster mode: full screen, large type, the experiment's key view large, a QR code of its link, and
 * a deck of prepared experiments stepped with ← / →. Slide 0 is the experiment open when poster
 * mode started (unless started as a kiosk, `?poster`), its stale results run again on entering
 * (actions/poster_slide.ts); the rest is the shipped deck. R (or the button, or 3 minutes idle)
 * goes back to slide 1 (a kiosk: the deck's first experiment, local
 * state cleared). Slides do not replace the user's saved experiment (link, local storage): Esc
 * (or Leave) puts it back as it was on entering (actions/experiment.ts holdForPoster). Full screen is asked for by the button that opens it (a user gesture,
 * enterPosterFullscreen); a kiosk start fills the window, the browser's kiosk mode the screen.
 */
export function PosterMode({ children, kiosk, onExit }: PosterModeProps) {
  // Slide 0 is the experiment held for the user (one capture: the one put back on leaving).
  const [slides, setSlides] = useState<Experiment[]>(() => (kiosk ? [] : [holdForPoster()]));
  const [index, setIndex] = useState(0);
  const [deckTitle, setDeckTitle] = useState('Branchpoint');
  const [problem, setProblem] = useState<string | null>(null);
  const root = useRef<HTMLDivElement | null>(null);
  const busy = useStore((s) => s.job !== null);
  const prompt = useStore((s) => s.prompt);
  const hashLink = useStore((s) => (s.restoring ? '' : `${s.prompt}\u0000${s.interventions.length}\u0000${s.view}`));
  const [link, setLink] = useState('');
  // Vectors slide 1's code leaves out (their values would make it too dense to scan).
  const [omitted, setOmitted] = useState<string[]>([]);
  const deckStart = kiosk ? 0 : 1;
  // Outside a kiosk the user's experiment is held (the link and local storage keep it) and put back on leaving.
  const slideLoaded = useRef(false);
  const refreshed = useRef(false);
  useEffect(() => {
    if (kiosk) return;
    slideLoaded.current = false;
    holdForPoster(); // already held since the first render; again after a remount released it
    // Slide 1 shows the experiment as edited: what the view shows and is stale is run again (once, not per StrictMode mount).
    if (!refreshed.current) { refreshed.current = true; void refreshOwnSlide(); }
    return () => { void releasePosterHold(slideLoaded.current); };
  }, [kiosk]);
  useEffect(() => {
    if (!hashLink) {
      // A deck slide still restoring (its model loads can take a minute): its QR names it by its deck link
      // at once, never the previous slide's; the full link, where short enough, follows once it is restored.
      if (index >= deckStart) { setLink(deckLink(index - deckStart)); setOmitted([]); }
      return;
    }
    // The user's own experiment (slide 1 outside a kiosk) has no deck link: its QR holds its shortest link (#q=, its
    // difference from the default experiment), without the vectors' values when they would make it too dense; a deck
    // slide's holds its full link when short enough, else `#deck=n`.
    if (index < deckStart) {
      const own = posterOwnLink();
      setLink(own.url);
      setOmitted(own.omitted);
      return;
    }
    const url = experimentLink({ forQr: true }).url;
    setLink(url.length <= QR_MAX ? url : deckLink(index - deckStart));
    setOmitted([]);
  }, [hashLink, index, deckStart]);
  const qr = useQr(link || location.href);

  useEffect(() => {
    void loadDeck().then(({ deck, problem: p }) => {
      setProblem(p);
      if (!deck) return;
      setDeckTitle(deck.title);
      setSlides((s) => [...s.slice(0, kiosk ? 0 : 1), ...deck.experiments]);
      if (kiosk && deck.experiments[0]) void restoreExperiment(deck.experiments[0], 'deck');
    });
    return () => { if (document.fullscreenElement) void document.exitFullscreen().catch(() => {}); };
  }, [kiosk]);

  // A slide restoring (its load and reruns: several jobs in a row), and the slide a key press made
  // meanwhile asks for: it is queued and shown, then gone to once the slide is ready (never dropped).
  const [restoringSlide, setRestoringSlide] = useState(false);
  const [queued, setQueued] = useState<number | null>(null);
  const slideBusy = busy || restoringSlide;
  const go = useCallback((i: number) => {
    if (i < 0 || i >= slides.length) return;
    if (restoringSlide || useStore.getState().job) { setQueued(i === index ? null : i); return; }
    if (i === index) return;
    setQueued(null);
    if (!kiosk && index < deckStart) holdPosterResults(); // the user's slide as shown (refreshed): put back on leaving
    setIndex(i);
    slideLoaded.current = true;
    setRestoringSlide(true);
    void restoreExperiment(slides[i], 'deck').finally(() => setRestoringSlide(false));
  }, [slides, index, restoringSlide, kiosk, deckStart]);
  useEffect(() => {
    if (!slideBusy && queued !== null) go(queued);
  }, [slideBusy, queued, go]);
  /** The slide a step starts from: the one queued, else the one shown. */
  const at = queued ?? index;

  const reset = useCallback(() => {
    if (!kiosk) {
      // Not a kiosk: back to slide 1, the user's own experiment (their saved one is left alone).
      if (index !== 0) { setIndex(0); slideLoaded.current = true; void restoreExperiment(slides[0], 'experiment'); }
      return;
    }
    try { localStorage.removeItem(STORAGE_KEY); } catch { /* storage unavailable */ }
    const first = slides[0];
    if (!first) return;
    setIndex(0);
    void restoreExperiment(first, 'deck');
  }, [slides, kiosk, index]);

  useEffect(() => {
    let idle = setTimeout(reset, KIOSK_IDLE_MS);
    const onKey = (e: KeyboardEvent) => {
      clearTimeout(idle);
      idle = setTimeout(reset, KIOSK_IDLE_MS);
      if ((e.target as HTMLElement)?.closest?.('input, textarea, select')) return;
      if (e.key === 'ArrowRight' || e.key === 'PageDown' || e.key === ' ') { e.preventDefault(); go(at + 1); }
      else if (e.key === 'ArrowLeft' || e.key === 'PageUp') { e.preventDefault(); go(at - 1); }
      else if (e.key === 'Escape') onExit();
      else if (e.key === 'r' || e.key === 'R') reset();
    };
    const onPointer = () => { clearTimeout(idle); idle = setTimeout(reset, KIOSK_IDLE_MS); };
    addEventListener('keydown', onKey);
    addEventListener('pointerdown', onPointer);
    return () => { clearTimeout(idle); removeEventListener('keydown', onKey); removeEventListener('pointerdown', onPointer); };
  }, [go, at, reset, onExit]);

  const slide = slides[index];
  const title = slide?.title ?? (index === 0 && !kiosk ? 'This experiment' : deckTitle);
  return (
    <div className="poster" ref={root} data-testid="poster" data-slide={index} data-slides={slides.length}>
      <div className="poster-view">{children}</div>
      <aside className="poster-side">
        <p className="poster-deck">{deckTitle}</p>
        <h1 data-testid="poster-title">{title}</h1>
        {slide?.note && <p className="poster-note" data-testid="poster-note">{slide.note}</p>}
        <p className="poster-prompt">“{prompt}”</p>
        <figure className="poster-qr" data-testid="poster-qr" data-link={link}>
          <div className="qr" dangerouslySetInnerHTML={{ __html: qr }} />
          <figcaption>{qr ? 'Scan to open this experiment' : 'This experiment\'s link is too long for a QR code: save it as a file to share it.'}</figcaption>
          {qr && omitted.length > 0 && (
            <p className="poster-qr-note" data-testid="poster-qr-omitted">
              Without the vector{omitted.length > 1 ? 's' : ''} {omitted.map((n) => `“${n}”`).join(', ')} ({omitted.length > 1 ? 'their' : 'its'} values would make the code too dense to scan):
              the scan opens the prompt, futures and interventions; build or import {omitted.length > 1 ? 'them' : 'it'} there, or share the experiment file.
            </p>
          )}
        </figure>
        <nav className="poster-nav">
          <button type="button" onClick={() => go(at - 1)} disabled={at === 0} aria-label="previous experiment">←</button>
          <span data-testid="poster-counter">{index + 1} / {Math.max(1, slides.length)}</span>
          <button type="button" onClick={() => go(at + 1)} disabled={at >= slides.length - 1} aria-label="next experiment">→</button>
        </nav>
        {/* while a slide runs, the keys line says so (same place, so Reset and Leave do not move) */}
        {slideBusy
          ? <p className="poster-keys poster-busy" role="status" data-testid="poster-busy" data-queued={queued ?? ''}>{queued !== null ? `Slide ${index + 1} still running: then ${queued + 1}` : `Running slide ${index + 1}…`}</p>
          : <p className="poster-keys">← → step · R reset · Esc leave</p>}
        <div className="poster-actions">
          <button type="button" data-testid="poster-reset" onClick={reset}>Reset</button>
          <button type="button" data-testid="poster-exit" onClick={onExit}>Leave poster mode</button>
        </div>
        {problem && <p className="poster-problem" role="status">Deck: {problem}</p>}
      </aside>
    </div>
  );
}
