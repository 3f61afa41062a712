// The add-on's route on Volto's Node server: the server's change stream, streamed. Volto's own
// proxy of /++api++ (its devproxy middleware) keeps each whole answer before passing it on, so a
// stream of Server-Sent Events (`GET /@changes` with `Accept: text/event-stream`, which the
// server holds open for minutes) would reach the browser only when it ends. This route takes
// exactly those requests and pipes the server's answer through as it comes; every other request
// goes on to Volto's proxy. Registered first in `expressMiddleware` on the server side only.
import http from 'http';
import https from 'https';
import config from '@plone/volto/registry';

// The request headers passed on: the browser's Host (the server builds its URLs from it, as
// Volto's proxy keeps it), the user's token and where the stream resumes.
const PASSED = ['host', 'authorization', 'accept', 'last-event-id'];

function isStreamRequest(req) {
  return (
    req.method === 'GET' &&
    (req.path === '/++api++/@changes' ||
      (req.path.startsWith('/++api++/') && req.path.endsWith('/@changes'))) &&
    (req.headers.accept || '').includes('text/event-stream')
  );
}

/** The Express middleware streaming the change feed's Server-Sent Events from the API server. */
export default function changeStreamMiddleware() {
  function middleware(req, res, next) {
    if (!isStreamRequest(req)) return next();
    const base =
      config.settings.internalApiPath || config.settings.devProxyToApiPath;
    if (!base) return next();
    const target = new URL(
      base.replace(/\/$/, '') + req.originalUrl.replace(/^\/\+\+api\+\+/, ''),
    );
    const headers = {};
    PASSED.forEach((h) => {
      if (req.headers[h]) headers[h] = req.headers[h];
    });
    const client = target.protocol === 'https:' ? https : http;
    const upstream = client.request(
      target,
      { method: 'GET', headers },
      (answer) => {
        res.status(answer.statusCode);
        ['content-type', 'cache-control', 'retry-after'].forEach((h) => {
          if (answer.headers[h]) res.set(h, answer.headers[h]);
        });
        res.set('X-Accel-Buffering', 'no');
        res.flushHeaders();
        answer.on('data', (chunk) => res.write(chunk));
        answer.on('end', () => res.end());
        answer.on('error', () => res.end());
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) {
        res.status(502).json({
          type: 'BadGateway',
          message: 'The server cannot be reached.',
        });
      } else res.end();
    });
    // the browser went away (or the worker stopped following): end the server's stream too
    res.on('close', () => upstream.destroy());
    upstream.end();
  }
  middleware.id = 'voltoOfflineChangeStream';
  return middleware;
}
