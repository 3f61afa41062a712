// Talking to the add-on's Service Worker (public/offline-sw.js) from the page.

/** The Service Worker's URL and scope (the whole site). */
export const SW_URL = '/offline-sw.js';

/** Register the Service Worker (a module worker) once per page; later calls do nothing. */
export function registerWorker() {
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator)) {
    return;
  }
  if (registerWorker.done) return;
  registerWorker.done = true;
  navigator.serviceWorker
    .register(SW_URL, { type: 'module', scope: '/' })
    .catch((e) =>
      // eslint-disable-next-line no-console
      console.error('volto-offline: the Service Worker did not register', e),
    );
}

/**
 * Send `msg` to the Service Worker controlling this page; resolves with its answer. Every message
 * says whether the browser is online (navigator.onLine): the worker syncs only while it is.
 */
export function ask(msg, timeout = 30000) {
  return new Promise((resolve, reject) => {
    const sw =
      typeof navigator !== 'undefined' &&
      navigator.serviceWorker &&
      navigator.serviceWorker.controller;
    if (!sw) {
      reject(new Error('no Service Worker controls this page (yet)'));
      return;
    }
    const channel = new MessageChannel();
    const timer = setTimeout(
      () => reject(new Error('the Service Worker did not answer')),
      timeout,
    );
    channel.port1.onmessage = (e) => {
      clearTimeout(timer);
      if (e.data && e.data.ok) resolve(e.data.value);
      else reject(new Error((e.data && e.data.error) || 'failed'));
    };
    sw.postMessage({ ...msg, online: navigator.onLine }, [channel.port2]);
  });
}
