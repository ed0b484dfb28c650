import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, beforeEach } from 'vitest';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

/** The zustand store's two methods a test resets it with. */
interface ResettableStore<S> { getState(): S; setState(state: S, replace: true): void }

/**
 * Component tests' DOM (happy-dom): before each test of the calling file the store is put back to
 * its state at this call and a React root is made in a fresh <div> in document.body; after each the
 * root is unmounted and the <div> removed. Read `root` and `host` from the returned object inside a
 * test (they are new for every test).
 */
export function domPerTest<S>(store: ResettableStore<S>): { readonly root: Root; readonly host: HTMLElement } {
  const initial = store.getState();
  const dom = {} as { root: Root; host: HTMLElement };
  beforeEach(() => {
    store.setState(initial, true);
    dom.host = document.createElement('div');
    document.body.append(dom.host);
    dom.root = createRoot(dom.host);
  });
  afterEach(() => {
    act(() => dom.root.unmount());
    dom.host.remove();
  });
  return dom;
}
