// A real OpenID provider (the `oidc-provider` package) for host-server's single sign-on process
// test (host-server/tests/oidc_process.rs). It listens on 127.0.0.1 ($PORT, or a free port),
// prints "listening on http://127.0.0.1:PORT" (its issuer), and serves one confidential client:
//   client_id "cms", client_secret "cms-secret", redirect URI $REDIRECT_URI, PKCE required.
// Its signing key is made at start under the key id $KEY_ID (default "k1"): started again on the
// same port with another key id, it is the same issuer after a key rotation.
//
// What a browser would do is done by the test through three endpoints of its own, under /__test
// (with LOGIN_FORM=1, a real browser does it: the provider shows a sign-in form, and the account
// set below signs in with its "login" and "password"; scripts/volto-sso-e2e.sh):
//   POST /__test/account  {"sub": ..., "claims": {...}, "login"?, "password"?}: the account the
//                         next login logs in as (its claims: name, email, preferred_username,
//                         groups)
//   POST /__test/mode     {"mode": "normal" | "forge" | "nonce" | "expired"}: how the token
//                         endpoint's ID token is changed before it is sent: signed with another key
//                         under the same key id, a different nonce, or an expiry an hour ago (the
//                         last two signed with the provider's real key); "unknown-kid": signed
//                         with another key under a key id the provider never published
//   GET  /__test/counts   {"discovery": n, "jwks": n}: how often its discovery document and its
//                         keys were read since it started
//   GET  /__test/drive?url=<authorization URL>: follows the provider's redirects with a cookie
//                         jar (its login and consent are granted to the account set above) and
//                         answers {"callback": <the redirect URI with code and state>}
import http from 'node:http';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const redirectUri = process.env.REDIRECT_URI;
if (!redirectUri) {
  console.error('REDIRECT_URI is required');
  process.exit(2);
}

const { privateKey: realKey } = await jose.generateKeyPair('RS256', { extractable: true });
const { privateKey: forgedKey } = await jose.generateKeyPair('RS256', { extractable: true });
const keyId = process.env.KEY_ID || 'k1';
const realJwk = { ...(await jose.exportJWK(realKey)), kid: keyId, alg: 'RS256', use: 'sig' };

let account = { sub: 'nobody', claims: {} };
let mode = 'normal';
const counts = { discovery: 0, jwks: 0 };

const server = http.createServer();
await new Promise((resolve) => server.listen(Number(process.env.PORT || 0), '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'cms',
      client_secret: 'cms-secret',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [realJwk] },
  cookies: { keys: ['oidc-process-test'] },
  claims: {
    openid: ['sub'],
    profile: ['name', 'preferred_username'],
    email: ['email'],
    groups: ['groups'],
  },
  // The mapped claims go into the ID token itself (not only the userinfo endpoint).
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (ctx, id) => ({
    accountId: id,
    claims: async () => ({ sub: id, ...(id === account.sub ? account.claims : {}) }),
  }),
});

// The token endpoint's ID token, changed as the mode says.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.method !== 'POST' || ctx.path !== '/token' || mode === 'normal') return;
  const body = ctx.body;
  if (!body || typeof body.id_token !== 'string') return;
  const payload = jose.decodeJwt(body.id_token);
  let key = realKey;
  let kid = keyId;
  if (mode === 'forge') key = forgedKey;
  if (mode === 'unknown-kid') {
    key = forgedKey;
    kid = 'never-published';
  }
  if (mode === 'nonce') payload.nonce = 'not-the-nonce-that-was-sent';
  if (mode === 'expired') {
    const now = Math.floor(Date.now() / 1000);
    payload.iat = now - 7200;
    payload.exp = now - 3600;
  }
  body.id_token = await new jose.SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', kid })
    .sign(key);
  ctx.body = body;
});

const callback = provider.callback();

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

function send(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

const escape = (text) =>
  String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// The sign-in page a person sees (LOGIN_FORM=1).
function signInPage(res, uid, error) {
  res.writeHead(error ? 401 : 200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><html><head><title>Sign in - test identity provider</title></head>
<body><h1>Test identity provider</h1>
${error ? `<p id="error">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}">
<label>User name <input id="username" name="username" autocomplete="username"></label>
<label>Password <input id="password" name="password" type="password"></label>
<button id="sign-in" type="submit">Sign in</button>
</form></body></html>`);
}

// Log in and consent as the current account (what the person at the browser would do): at once,
// or through the sign-in form with LOGIN_FORM=1.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (process.env.LOGIN_FORM === '1') {
    if (req.method !== 'POST') return signInPage(res, details.uid);
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    if (form.get('username') !== account.login || form.get('password') !== account.password) {
      return signInPage(res, details.uid, 'Wrong user name or password.');
    }
  }
  const accountId = account.sub;
  const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(String(details.params.scope));
  const grantId = await grant.save();
  await provider.interactionFinished(
    req,
    res,
    { login: { accountId }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}

// Follow the provider's redirects from `url` until one leaves the provider.
async function drive(url) {
  const jar = new Map();
  for (let i = 0; i < 12; i += 1) {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    for (const line of r.headers.getSetCookie()) {
      const pair = line.split(';')[0];
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1));
    }
    const location = r.headers.get('location');
    if (!location) throw new Error(`no redirect from ${url}: ${r.status} ${await r.text()}`);
    const next = new URL(location, url).href;
    if (!next.startsWith(`${issuer}/`)) return next;
    url = next;
  }
  throw new Error('too many redirects');
}

server.on('request', async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    if (url.pathname === '/__test/account' && req.method === 'POST') {
      account = await readJson(req);
      return send(res, 200, { ok: true });
    }
    if (url.pathname === '/__test/mode' && req.method === 'POST') {
      ({ mode } = await readJson(req));
      return send(res, 200, { ok: true });
    }
    if (url.pathname === '/__test/counts') return send(res, 200, counts);
    if (url.pathname === '/.well-known/openid-configuration') counts.discovery += 1;
    if (url.pathname === '/jwks') counts.jwks += 1;
    if (url.pathname === '/__test/drive') {
      return send(res, 200, { callback: await drive(url.searchParams.get('url')) });
    }
    if (url.pathname.startsWith('/interaction/')) return await interaction(req, res);
    return callback(req, res);
  } catch (e) {
    return send(res, 500, { error: String(e && e.stack ? e.stack : e) });
  }
});

console.log(`listening on ${issuer}`);
