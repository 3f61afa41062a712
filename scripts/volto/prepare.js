// Turns the published @plone/volto package.json into the one we install: the devDependencies a
// production build does not need are dropped (tests, linters, storybook, release tooling, types;
// some are not on the registry in the pinned versions), the build tools are kept, and the
// monorepo's pnpm overrides are carried over as npm overrides.
//   node prepare.js path/to/package.json
'use strict';
const fs = require('fs');

const file = process.argv[2];
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));

const dropped = [
  /^@storybook\//, /^storybook$/, /^@types\//, /^@testing-library\//, /^cypress/, /^@jest\//,
  /^jest/, /^ts-jest$/, /^vitest$/, /^@vitest\//, /^@vitejs\//, /^jsdom$/, /^eslint/,
  /^@typescript-eslint\//, /^@babel\/eslint-parser$/, /^stylelint/, /^release-it$/,
  /^start-server-and-test$/, /^wait-on$/, /^why$/, /^use-trace-update$/, /^axe-core$/,
  /^deep-freeze$/, /^identity-obj-proxy$/, /^@sinonjs\//, /^jsonwebtoken$/,
  /^react-docgen-typescript-plugin$/, /^@plone\/types$/, /^@plone\/volto-coresandbox$/,
];
const dev = pkg.devDependencies || {};
for (const name of Object.keys(dev)) {
  if (dropped.some((re) => re.test(name))) delete dev[name];
}
pkg.devDependencies = dev;
// From the monorepo's root package.json at tag 18.33.0 (`pnpm.overrides`).
pkg.overrides = {
  '@pmmmwh/react-refresh-webpack-plugin': '0.5.11',
  'react-refresh': '0.14.0',
};
// Single sign-on (issue 38): Volto's login add-on for pas.plugins.oidc / pas.plugins.authomatic,
// installed in every build (one lockfile) but registered as an add-on only in the single sign-on
// variant (VOLTO_SSO=1, scripts/volto-sso-e2e.sh): its /login page lists the identity providers
// and no password form (Volto's own form moves to /fallback_login), which the default build's
// password-login test (tests/volto/editor-day.mjs) and password-only sites need at /login.
pkg.dependencies['@plone-collective/volto-authomatic'] = '2.0.1';
if (process.env.VOLTO_SSO === '1') {
  pkg.addons = [...(pkg.addons || []), '@plone-collective/volto-authomatic'];
}
// Lifecycle scripts of the monorepo (patches, husky) do not apply to the unpacked package.
delete pkg.scripts.postinstall;
delete pkg.scripts.prepare;
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n');
