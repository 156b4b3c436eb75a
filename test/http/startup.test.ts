// Startup order (issue F11): the server listens, and /health/ready says so, before its GraphQL
// schema is built (a second or two of CPU); a GraphQL request that comes first waits for the
// build and is answered, not refused.
import test from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { spawnServer } from '../helpers/server.ts';

test('ready before the GraphQL schema is built; an early GraphQL request waits for it', async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'early', origins: ['http://early.test'] });
  await addRoleUsers(owner, 'early');
  const server = await spawnServer(
    t,
    { DATABASE_OWNER_URL: target.ownerUrl, DATABASE_AUTHENTICATOR_URL: target.authenticatorUrl },
    { warm: false },
  );
  t.is((await request(server.port, { path: '/health/ready' })).status, 200);
  const token = (await login(server.port, 'early.test', 'viewer')).json.accessToken as string;
  const early = await request(server.port, {
    method: 'POST',
    path: '/graphql',
    host: 'early.test',
    headers: { authorization: `Bearer ${token}` },
    body: { query: '{ allIsos(first: 1) { totalCount } }' },
  });
  t.deepEqual(early.json, { data: { allIsos: { totalCount: 0 } } });

  const output = server.output();
  const listening = output.indexOf('listening on');
  const built = output.indexOf('"msg":"GraphQL schema built"');
  t.true(listening >= 0 && built > listening, 'listening first, then the schema');
  t.is(await server.stop(), 0);
});
