// The /offline-sync view: the state of the editor's offline copy, the writes waiting to be sent and
// the conflicts (writes the server refused), each with both versions side by side and "Keep mine"
// (send the write again over the server's version) or "Take theirs" (drop it, keep the server's).
import React, { useCallback, useEffect, useState } from 'react';
import { useLocation } from 'react-router-dom';
import { Portal } from 'react-portal';
import { Container } from 'semantic-ui-react';
import Toolbar from '@plone/volto/components/manage/Toolbar/Toolbar';
import { ask } from './worker';

// Fields not worth comparing (they differ on every copy, or are not the object's content).
const NOISE = new Set([
  '@id', '@components', '@type', 'UID', 'created', 'modified', 'parent', 'items',
  'items_total', 'previous_item', 'next_item', 'lock', 'version', 'is_folderish',
  'layout', 'id', 'allow_discussion', 'exclude_from_nav', 'language', 'working_copy',
  'working_copy_of', 'blocks_layout', 'effective', 'expires', 'creators',
  'contributors', 'rights', 'subjects', 'table_of_contents', 'changeNote',
  'versioning_enabled', 'targetUrl', 'is_workingcopy',
]);

function blockText(blocks, layout) {
  if (!blocks || typeof blocks !== 'object') return '';
  const order = (layout && layout.items) || Object.keys(blocks);
  return order
    .map((id) => blocks[id])
    .filter(Boolean)
    .map((b) => `[${b['@type']}] ${b.plaintext || b.text || ''}`.trim())
    .join('\n');
}

function show(key, obj) {
  if (!obj) return '—';
  if (key === 'blocks') return blockText(obj.blocks, obj.blocks_layout);
  const v = key === 'review_state' ? obj.review_state : obj[key];
  if (v === undefined || v === null || v === '') return '—';
  if (typeof v === 'object') {
    if (v.token !== undefined) return String(v.title || v.token);
    return JSON.stringify(v).slice(0, 400);
  }
  return String(v);
}

function differing(local, server) {
  const keys = new Set(['title']);
  for (const o of [local, server]) {
    if (o) Object.keys(o).forEach((k) => !NOISE.has(k) && keys.add(k));
  }
  return [...keys].filter(
    (k) => k === 'title' || show(k, local) !== show(k, server),
  );
}

function what(w) {
  if (!w) return 'an unreadable write';
  const path = w.path || '/';
  return `${w.method} ${path}`;
}

function Conflict({ c, onResolve, busy }) {
  const fields = differing(c.local, c.server);
  return (
    <div
      className="volto-offline-conflict ui segment"
      data-conflict-id={c.id}
      style={{ marginBottom: '1.5em' }}
    >
      <h3>
        {what(c.write)}{' '}
        <small>
          (the server answered {c.status}: {c.message})
        </small>
      </h3>
      {!c.server_fetched && <p>Fetching the server's version…</p>}
      <table className="ui celled table">
        <thead>
          <tr>
            <th>Field</th>
            <th>Mine (made offline)</th>
            <th>Theirs (on the server)</th>
          </tr>
        </thead>
        <tbody>
          {fields.map((k) => (
            <tr key={k} data-field={k}>
              <td>{k}</td>
              <td className="mine" style={{ whiteSpace: 'pre-wrap' }}>
                {show(k, c.local)}
              </td>
              <td className="theirs" style={{ whiteSpace: 'pre-wrap' }}>
                {show(k, c.server)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <button
        type="button"
        className="ui primary button volto-offline-keep-mine"
        disabled={busy || !c.write || !c.server_fetched}
        onClick={() => onResolve(c.id, 'mine')}
      >
        Keep mine
      </button>
      <button
        type="button"
        className="ui button volto-offline-take-theirs"
        disabled={busy}
        onClick={() => onResolve(c.id, 'theirs')}
      >
        Take theirs
      </button>
    </div>
  );
}

/** The view registered at /offline-sync. */
export default function OfflineSyncView() {
  const location = useLocation();
  const [client, setClient] = useState(false);
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  const load = useCallback(
    () =>
      ask({ type: 'details' }).then(
        (d) => {
          setData(d);
          setError(null);
        },
        (e) => setError(e.message),
      ),
    [],
  );

  useEffect(() => {
    setClient(true);
    load();
    const timer = setInterval(load, 3000);
    return () => clearInterval(timer);
  }, [load]);

  const run = (msg) => {
    setBusy(true);
    return ask(msg, 120000)
      .then(load, (e) => setError(e.message))
      .finally(() => setBusy(false));
  };

  const st = data && data.status;
  return (
    <Container id="page-offline-sync">
      <h1 className="documentFirstHeading">Offline copy</h1>
      {error && <p className="volto-offline-error">{error}</p>}
      {data && !data.replica && (
        <p>No offline copy is open: log in while the server can be reached.</p>
      )}
      {st && (
        <p className="volto-offline-summary">
          {st.online ? 'Online' : 'Offline'} · copy of {st.server} for {st.login}
          {' · '}
          {st.downloaded ? 'downloaded' : 'downloading'} · {st.pending} waiting
          · {st.conflicts} conflict{st.conflicts === 1 ? '' : 's'}
          {st.lastError ? ` · last error: ${st.lastError}` : ''}{' '}
          <button
            type="button"
            className="ui basic button volto-offline-sync-now"
            disabled={busy}
            onClick={() => run({ type: 'sync' })}
          >
            Sync now
          </button>
        </p>
      )}
      {data && data.replica && (
        <>
          <h2>Conflicts</h2>
          {data.conflicts.length === 0 && (
            <p className="volto-offline-no-conflicts">No conflicts.</p>
          )}
          {data.conflicts.map((c) => (
            <Conflict
              key={c.id}
              c={c}
              busy={busy}
              onResolve={(id, how) => run({ type: 'resolve', id, how })}
            />
          ))}
          <h2>Waiting to be sent</h2>
          {data.pending.length === 0 ? (
            <p className="volto-offline-nothing-pending">Nothing waits.</p>
          ) : (
            <ol className="volto-offline-pending-list">
              {data.pending.map((w) => (
                <li key={w.seq}>
                  {what(w)}
                  {w.last_error ? ` (${w.last_error})` : ''}
                </li>
              ))}
            </ol>
          )}
        </>
      )}
      {client && (
        <Portal node={document.getElementById('toolbar')}>
          <Toolbar pathname={location.pathname} hideDefaultViewButtons inner={<span />} />
        </Portal>
      )}
    </Container>
  );
}
