import { useLayoutEffect, type RefObject } from 'react';

/** Gap kept between the side column and the window's top and bottom edges (px). */
const EDGE = 8;
/** The side column is never shorter than this (px): on a short window it runs past the bottom edge instead. */
const MIN_HEIGHT = 240;

/**
 * Keeps the workbench's side column (the experiment panel with the progress line at its foot) inside
 * the window: it sticks to the top once scrolled to (styles.css `.side-column`), and its height is
 * set here to end EDGE px above the window's bottom edge wherever its top lies, so the progress line
 * at its foot is always in view and lies over nothing (issue 29: floating at the foot of the window it
 * covered the Analyse button). Its height goes to the CSS variable --side-column-height (px); the
 * panel above the line scrolls inside it. Nothing is set in the one-column layout (≤ 1000 px wide),
 * where the column is not sticky (styles.css). `shown`: whether the workbench is drawn (not poster mode), so the
 * column is measured again when it comes back.
 */
export function useSideColumn(ref: RefObject<HTMLElement | null>, shown: boolean): void {
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    let frame = 0;
    const fit = () => {
      frame = 0;
      const top = Math.max(EDGE, el.getBoundingClientRect().top);
      el.style.setProperty('--side-column-height', `${Math.max(MIN_HEIGHT, Math.floor(window.innerHeight - EDGE - top))}px`);
    };
    const later = () => { if (!frame) frame = requestAnimationFrame(fit); };
    fit();
    addEventListener('scroll', later, { passive: true });
    addEventListener('resize', later);
    // the rows above it (banners, an opened Hub list) move its top without a scroll
    const watch = new ResizeObserver(later);
    watch.observe(document.body);
    // The line appearing (or growing: a queued Analyse) shortens the panel above it: the control in use there stays in
    // view (the Analyse button just pressed, which queues while a job runs, was hidden under the line).
    const panel = el.firstElementChild;
    const keep = new ResizeObserver(() => {
      const at = document.activeElement;
      if (panel && at instanceof HTMLElement && panel.contains(at)) at.scrollIntoView({ block: 'nearest' });
    });
    if (panel) keep.observe(panel);
    return () => { removeEventListener('scroll', later); removeEventListener('resize', later); watch.disconnect(); keep.disconnect(); if (frame) cancelAnimationFrame(frame); };
  }, [ref, shown]);
}
