// The toolbar indicator: online or offline, the writes waiting to be sent and the conflicts; a click
// opens the /offline-sync view. Rendered through Volto's appExtras into the toolbar's bottom
// pluggable (so only for a logged-in user, who has the toolbar). Also registers the Service Worker.
// When the server refused the user's token (revoked, or expired), the worker sends nothing and the
// indicator says "log in to sync", linking to Volto's login: a new token of the same user resumes.
import React, { useEffect, useState } from 'react';
import { useSelector } from 'react-redux';
import { Link, useLocation } from 'react-router-dom';
import { Plug } from '@plone/volto/components/manage/Pluggable';
import { ask, registerWorker } from './worker';

const POLL_MS = 2000;

/** The sync status the worker reports for the logged-in user, polled; `null` before the first. */
export function useOfflineStatus() {
  const token = useSelector((state) => state.userSession && state.userSession.token);
  const [status, setStatus] = useState(null);
  useEffect(() => {
    registerWorker();
  }, []);
  useEffect(() => {
    if (!token) {
      setStatus(null);
      return undefined;
    }
    let stopped = false;
    const tick = () =>
      ask({ type: 'status', token }).then(
        (v) => !stopped && setStatus(v),
        () => !stopped && setStatus(null),
      );
    tick();
    const timer = setInterval(tick, POLL_MS);
    window.addEventListener('online', tick);
    window.addEventListener('offline', tick);
    const sw = navigator.serviceWorker;
    if (sw) sw.addEventListener('controllerchange', tick);
    return () => {
      stopped = true;
      clearInterval(timer);
      window.removeEventListener('online', tick);
      window.removeEventListener('offline', tick);
      if (sw) sw.removeEventListener('controllerchange', tick);
    };
  }, [token]);
  return status;
}

function label(st) {
  if (!st) return 'Offline copy: not available';
  if (st.needsLogin) {
    return `Log in to sync: the server refused your session${
      st.pending ? `, ${st.pending} waiting` : ''
    }`;
  }
  if (!st.replica) return st.opening ? 'Offline copy: opening' : 'Offline copy: none';
  const parts = [st.online ? 'Online' : 'Offline'];
  if (!st.downloaded) parts.push('downloading');
  parts.push(`${st.pending} waiting`);
  parts.push(`${st.conflicts} conflict${st.conflicts === 1 ? '' : 's'}`);
  return parts.join(', ');
}

function Badge({ status: st }) {
  const location = useLocation();
  const online = !!(st && st.online);
  const conflicts = (st && st.conflicts) || 0;
  const pending = (st && st.pending) || 0;
  const needsLogin = !!(st && st.needsLogin);
  const color = conflicts || needsLogin ? '#c0392b' : online ? '#2e7d32' : '#b26a00';
  const here = location.pathname.replace(/\/(login|offline-sync)$/, '') || '/';
  return (
    <Link
      to={
        needsLogin
          ? {
              // isLogout: Volto's login form drops the refused session first (else it sees
              // a token and leaves at once); the worker keeps the replica's waiting writes
              pathname: '/login',
              search: `?return_url=${encodeURIComponent(here)}`,
              state: { isLogout: true },
            }
          : '/offline-sync'
      }
      id="volto-offline-status"
      className="item"
      title={label(st)}
      aria-label={label(st)}
      data-replica={st && st.replica ? 'yes' : 'no'}
      data-online={online ? 'yes' : 'no'}
      data-downloaded={st && st.downloaded ? 'yes' : 'no'}
      data-pending={pending}
      data-conflicts={conflicts}
      data-login-needed={needsLogin ? 'yes' : 'no'}
      data-stream={st && st.stream && st.stream.open ? 'open' : 'closed'}
      data-stream-events={(st && st.stream && st.stream.events) || 0}
      data-images={(st && st.images) || 0}
      style={{
        display: 'flex',
        flexDirection: 'column',
        alignItems: 'center',
        fontSize: '11px',
        lineHeight: '14px',
        color,
        padding: '4px 0',
        textDecoration: 'none',
      }}
    >
      <span
        style={{
          width: '14px',
          height: '14px',
          borderRadius: '7px',
          background: color,
          display: 'inline-block',
        }}
      />
      <span>
        {needsLogin ? 'log in to sync' : online ? 'online' : 'offline'}
      </span>
      {pending > 0 && <span className="volto-offline-pending">{pending}↑</span>}
      {conflicts > 0 && (
        <span className="volto-offline-conflicts">{conflicts}⚠</span>
      )}
    </Link>
  );
}

/** The appExtras component: plugs the badge into the toolbar. */
export default function OfflineStatus() {
  const status = useOfflineStatus();
  return (
    <Plug
      pluggable="main.toolbar.bottom"
      id="volto-offline-status"
      dependencies={[JSON.stringify(status)]}
    >
      {() => <Badge status={status} />}
    </Plug>
  );
}
