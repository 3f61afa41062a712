// The /offline-sync view: the state of the editor's offline copy, the writes waiting to be sent and
// the conflicts (writes the server refused), each with both versions side by side and "Keep mine"
// (send the write again over the server's version), "Take theirs" (drop it, keep the server's) or,
// for an edit, a merge of fields: the editor picks mine or theirs per field and "Merge" sends the
// server's version with the fields picked as mine (the replica's resolveConflict "merge"). The
// replica checks the merged version with the engine's own edit first: when the type's schema
// refuses it (an event that would end before it starts, ...), nothing changes, the conflict stays
// with the choices made, and the view shows why beside it.
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
  'versioning_enabled', 'targetUrl', 'is_workingcopy', 'owner', 'type_title',
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

// Fields shown but never sent in a merge: the workflow state changes by transitions only.
const NOT_MERGEABLE = new Set(['review_state']);

/** Whether conflict `c` can be merged field by field: an edit of an object both sides have. */
export function canMerge(c) {
  return (
    !!c.write &&
    c.write.method === 'PATCH' &&
    !c.write.created &&
    !!c.server_fetched &&
    !!c.server &&
    !!c.local
  );
}

/**
 * The fields a merge sends: each field picked as mine (`picks[k] === 'mine'`), with its value in
 * my version (`blocks` brings its `blocks_layout`). Fields picked as theirs are not sent: the
 * merge starts from the server's version.
 */
export function mergedFields(local, picks) {
  const out = {};
  Object.entries(picks).forEach(([k, side]) => {
    if (side !== 'mine' || NOT_MERGEABLE.has(k) || local[k] === undefined) return;
    out[k] = local[k];
    if (k === 'blocks' && local.blocks_layout) {
      out.blocks_layout = local.blocks_layout;
    }
  });
  return out;
}

function what(w) {
  if (!w) return 'an unreadable write';
  const path = w.path || '/';
  return `${w.method} ${path}`;
}

function Conflict({ c, onResolve, busy, error }) {
  const fields = differing(c.local, c.server);
  const merge = canMerge(c);
  // a field only one side has (the server's read-only fields) is not the local edit's to send
  const mergeable = merge
    ? fields.filter(
        (k) =>
          !NOT_MERGEABLE.has(k) &&
          k in c.local &&
          k in c.server &&
          show(k, c.local) !== show(k, c.server),
      )
    : [];
  // per field: 'mine' (default) or 'theirs'
  const [picks, setPicks] = useState({});
  const pick = (k) => picks[k] || 'mine';
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
      {error && (
        <p className="volto-offline-conflict-error ui negative message">
          {error}
        </p>
      )}
      <table className="ui celled table">
        <thead>
          <tr>
            <th>Field</th>
            <th>Mine (made offline)</th>
            <th>Theirs (on the server)</th>
            {merge && <th>Merge takes</th>}
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
              {merge && (
                <td className="pick">
                  {mergeable.includes(k) ? (
                    ['mine', 'theirs'].map((side) => (
                      <label key={side} style={{ marginRight: '1em' }}>
                        <input
                          type="radio"
                          name={`pick-${c.id}-${k}`}
                          value={side}
                          className={`volto-offline-pick-${side}`}
                          checked={pick(k) === side}
                          disabled={busy}
                          onChange={() => setPicks({ ...picks, [k]: side })}
                        />{' '}
                        {side}
                      </label>
                    ))
                  ) : (
                    <span>theirs</span>
                  )}
                </td>
              )}
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
      {merge && (
        <button
          type="button"
          className="ui button volto-offline-merge"
          disabled={busy}
          onClick={() => {
            const chosen = mergedFields(
              c.local,
              Object.fromEntries(mergeable.map((k) => [k, pick(k)])),
            );
            // nothing picked as mine: the merge is the server's version
            if (Object.keys(chosen).length === 0) onResolve(c.id, 'theirs');
            else onResolve(c.id, 'merge', chosen);
          }}
        >
          Merge
        </button>
      )}
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
  // per conflict: why its last resolution was refused (the conflict and its choices stay)
  const [refused, setRefused] = useState({});

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
          {st.lastError ? ` · last error: ${st.lastError}` : ''}
          {st.needsLogin ? ' · the server refused your session: log in again to sync' : ''}{' '}
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
              error={refused[c.id]}
              onResolve={(id, how, fields) => {
                setBusy(true);
                setRefused({ ...refused, [id]: undefined });
                return ask({ type: 'resolve', id, how, fields }, 120000)
                  .then(load, (e) =>
                    setRefused({
                      ...refused,
                      [id]: e.message.replace(/^resolveConflict: /, ''),
                    }),
                  )
                  .finally(() => setBusy(false));
              }}
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
