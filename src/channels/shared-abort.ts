/**
 * One 'abort' listener per caller signal, however many deliveries share it. A dispatcher passes
 * one signal to thousands of deliveries; a listener per delivery costs Node's EventTarget time
 * linear in the listeners present at each add and remove. Here each signal gets one listener that
 * calls every callback registered under it, and a delivery that ends removes its callback from a Set.
 */
const callbacksBySignal = new WeakMap<AbortSignal, Set<(reason: Error) => void>>();

/**
 * Calls `onAbort` with the signal's reason (an Error, else `aborted`) when `signal` aborts;
 * returns the function that unregisters it. The caller checks `signal.aborted` first.
 */
export function onSharedAbort(signal: AbortSignal, onAbort: (reason: Error) => void): () => void {
  let callbacks = callbacksBySignal.get(signal);
  if (!callbacks) {
    const created = new Set<(reason: Error) => void>();
    signal.addEventListener(
      'abort',
      () => {
        const reason = signal.reason instanceof Error ? signal.reason : new Error('aborted');
        for (const callback of created) callback(reason);
      },
      { once: true },
    );
    callbacksBySignal.set(signal, created);
    callbacks = created;
  }
  callbacks.add(onAbort);
  const held = callbacks;
  return () => {
    held.delete(onAbort);
  };
}
