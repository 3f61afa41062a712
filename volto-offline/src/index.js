// volto-offline: Volto keeps working without the server. The add-on registers a Service Worker
// (public/offline-sw.js) that caches the app and answers Volto's API from a replica of the site in
// the browser when the server cannot be reached, a toolbar indicator (writes waiting, conflicts),
// the /offline-sync view that lists conflicts with both versions, and (on Volto's Node server) a
// route that streams the server's change feed to the worker (src/server.js). See the README's
// "Volto offline" section.
import OfflineStatus from './OfflineStatus';
import OfflineSyncView from './OfflineSyncView';

export default function applyConfig(config) {
  config.settings.appExtras = [
    ...(config.settings.appExtras || []),
    { match: '', component: OfflineStatus },
  ];
  config.addonRoutes = [
    ...(config.addonRoutes || []),
    { path: '/offline-sync', component: OfflineSyncView, exact: true },
  ];
  if (__SERVER__) {
    // server-side only: the browser bundle never takes Node's http modules
    const changeStreamMiddleware = require('./server').default;
    config.settings.expressMiddleware = [
      changeStreamMiddleware(),
      ...(config.settings.expressMiddleware || []),
    ];
  }
  return config;
}
