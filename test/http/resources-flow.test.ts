// The generic REST resources (rest-adapter/resource.ts) over real HTTP: the same tests run against
// every description in CASES (helpers/resource-cases.ts): the whole flow under '' and under /api,
// and the refusals (roles, keys, references, tenants).
//
// Every response is also checked against the OpenAPI document (helpers/http.ts): an undocumented
// status or a body that breaks its schema fails the request itself.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import {
  versionOf,
  PREFIXES,
  type Item,
  world,
  problem,
  pointers,
  sorted,
  normal,
  ids,
  create,
  countRows,
  CASES,
  writableOnUpdate,
  LIST_PARAMETERS,
} from '../helpers/resource-cases.ts';

// ------------------------------------------------------------------------------------------------
// The whole flow of each resource, under '' and under /api

for (const prefix of PREFIXES) {
  for (const c of CASES) {
    const path = `${prefix}/${c.resource.path}`;
    // The same item is also read under the other prefix: /x and /api/x are one API.
    const elsewhere = `${prefix ? '' : '/api'}/${c.resource.path}`;

    test(`${path}: create, read, list and filter, page, update, delete, replay`, async (t) => {
      const w = await world(t);
      const d = w.dA;
      const eng = w.a.engineer;

      // Create: 201 with Location and ETag; the body is the item as GET returns it, as sent.
      const made: Item[] = [];
      for (const n of [0, 1]) {
        if (n) await sleep(20); // so updatedSince can tell item 0 from item 1 (ms precision)
        const body = c.body(d, n);
        const res = await eng.post(path, body);
        t.is(res.status, 201, res.text);
        const item = res.json as Item;
        t.is(res.headers.location, `${path}/${item.id}`);
        t.is(versionOf(res.headers.etag), item.version);
        t.is(res.headers['idempotent-replayed'], undefined, 'not a replay');
        for (const [field, value] of Object.entries(body)) {
          t.deepEqual(normal(item[field]), normal(value), `${field} as sent`);
        }
        const read = await eng.get(res.headers.location!);
        t.is(read.status, 200);
        t.deepEqual(read.json, item, 'POST answers the item as GET reads it');
        t.is(read.headers.etag, res.headers.etag);
        t.deepEqual((await w.a.viewer.get(`${elsewhere}/${item.id}`)).json, item, elsewhere);
        made.push(item);
      }
      const [a, b] = made as [Item, Item];

      // Read: If-None-Match with the current tag is 304 without a body; another tag reads it.
      const tag = (await eng.get(`${path}/${a.id}`)).headers.etag!;
      t.is(versionOf(tag), a.version);
      const cached = await eng.get(`${path}/${a.id}`, { 'if-none-match': tag });
      t.is(cached.status, 304);
      t.is(cached.text, '');
      t.is(cached.headers.etag, tag);
      const other = await eng.get(`${path}/${a.id}`, { 'if-none-match': `"${a.version + 7}"` });
      t.is(other.status, 200);
      for (const id of [randomUUID(), 'not-a-uuid']) {
        problem(t, await eng.get(`${path}/${id}`), 404, undefined, `GET ${id}`);
      }

      // List: both items; updatedSince from item 1's creation finds it and not item 0.
      const all = await w.a.viewer.get(`${path}?limit=500`);
      t.is(all.status, 200);
      t.true(ids(all).includes(a.id) && ids(all).includes(b.id), 'the list holds both');
      const since = (item: Item) => `${path}?updatedSince=${encodeURIComponent(item.createdAt)}`;
      t.deepEqual(ids(await eng.get(since(b))), [b.id], 'updatedSince: only the newer');
      const future = encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString());
      t.deepEqual(ids(await eng.get(`${path}?updatedSince=${future}`)), []);

      // Filters: every filter the resource offers has a case, and each narrows the list.
      const offered = Object.keys(c.resource.listQuery.shape).filter(
        (name) => !LIST_PARAMETERS.includes(name),
      );
      t.deepEqual(sorted(Object.keys(c.filters)), sorted(offered), 'each filter has a case');
      await c.beforeFilters?.(w, path, a, b);
      const [a1, b1] = [
        (await eng.get(`${path}/${a.id}`)).json as Item,
        (await eng.get(`${path}/${b.id}`)).json as Item,
      ];
      for (const [name, cases] of Object.entries(c.filters)) {
        for (const f of [cases].flat()) {
          const query = f.query(a1, b1);
          const res = await w.a.viewer.get(`${path}?${query}&limit=500`);
          t.is(res.status, 200, `${query}: ${res.text}`);
          const [wanted, unwanted] = f.wants === 'b' ? [b1, a1] : [a1, b1];
          t.true(ids(res).includes(wanted.id), `${name}: ${query} finds its item`);
          t.false(ids(res).includes(unwanted.id), `${name}: ${query} leaves the other out`);
          for (const item of res.json.items as Item[]) {
            t.true(f.matches(item, a1, b1), `${name}: ${query} returned ${JSON.stringify(item)}`);
          }
        }
      }

      // Paging: limit=1 walks every item once, following Link rel=next.
      const seen: string[] = [];
      let next: string | undefined = `${path}?limit=1`;
      while (next) {
        const res = await w.a.viewer.get(next);
        t.is(res.status, 200);
        t.is(res.json.items.length, 1);
        seen.push(...ids(res));
        const cursor = res.json.nextCursor as string | null;
        const link = res.headers.link as string | undefined;
        t.is(
          link,
          cursor === null ? undefined : `<${path}?limit=1&cursor=${cursor}>; rel="next"`,
          'Link rel=next exactly when there is a next page',
        );
        next = /^<([^>]+)>; rel="next"$/.exec(link ?? '')?.[1];
      }
      t.deepEqual(seen, ids(all), 'the pages, in order, are the whole list');

      // Update with a fresh If-Match: the change, a new version, the rest kept.
      const change = c.change(d);
      const updated = await eng.patch(`${path}/${a.id}`, change, { 'if-match': `"${a1.version}"` });
      t.is(updated.status, 200, updated.text);
      const a2 = updated.json as Item;
      t.is(a2.version, a1.version + 1);
      t.is(versionOf(updated.headers.etag), a2.version);
      for (const [field, value] of Object.entries(a1)) {
        if (field === 'version' || field === 'updatedAt') continue;
        const expected = field in change ? change[field] : value;
        t.deepEqual(normal(a2[field]), normal(expected), `${field} after the change`);
      }
      t.deepEqual((await eng.get(`${elsewhere}/${a.id}`)).json, a2, 'GET reads the change');
      t.true(ids(await eng.get(since(b))).includes(a.id), 'updatedSince sees the change');

      // A stale If-Match: 412 with the current version, and nothing changed.
      const stale = await eng.patch(`${path}/${a.id}`, change, { 'if-match': `"${a1.version}"` });
      problem(t, stale, 412, '/problems/stale-version', 'stale If-Match');
      t.is(stale.json.version, a2.version);
      problem(t, await eng.patch(`${path}/${a.id}`, change, { 'if-match': 'x' }), 412);
      // "<version>.<n>" is a tag only ISOs issue (their weld counts' version after the dot):
      // elsewhere it names nothing, even when its version part is the current one.
      if (!path.endsWith('/isos')) {
        const dotted = { 'if-match': `"${a2.version}.1"` };
        problem(t, await eng.patch(`${path}/${a.id}`, change, dotted), 412, undefined, 'N.M tag');
      }
      problem(t, await eng.patch(`${path}/${randomUUID()}`, change), 404, undefined, 'PATCH ?');

      // Read-only fields, sent back as GET returned them: 422 naming each, in PATCH and POST.
      const readOnlyPatch = ['id', 'version', 'createdAt', 'updatedAt', ...c.readOnly.patch];
      const echoed = await eng.patch(
        `${path}/${a.id}`,
        Object.fromEntries(readOnlyPatch.map((f) => [f, a2[f]])),
      );
      problem(t, echoed, 422, '/problems/validation-failed', 'read-only in PATCH');
      t.deepEqual(sorted(pointers(echoed)), sorted(readOnlyPatch.map((f) => `/${f}`)));
      t.true(echoed.json.errors.every((e: { detail: string }) => e.detail === 'is read-only here'));
      const readOnlyPost = ['id', 'version', 'createdAt', ...c.readOnly.post];
      const rows = await countRows(w, c.resource.table);
      const posted = await eng.post(path, {
        ...c.body(d, 5),
        ...Object.fromEntries(readOnlyPost.map((f) => [f, a2[f]])),
      });
      problem(t, posted, 422, '/problems/validation-failed', 'read-only in POST');
      t.deepEqual(sorted(pointers(posted)), sorted(readOnlyPost.map((f) => `/${f}`)));
      // Unknown fields are named as such.
      for (const res of [
        await eng.patch(`${path}/${a.id}`, { colour: 'red' }),
        await eng.post(path, { ...c.body(d, 6), colour: 'red' }),
      ]) {
        problem(t, res, 422, '/problems/validation-failed', 'unknown field');
        t.deepEqual(res.json.errors, [
          { pointer: '/colour', detail: 'is not a field of this object' },
        ]);
      }
      t.is(await countRows(w, c.resource.table), rows, 'the refused POSTs wrote nothing');
      t.is((await eng.get(`${path}/${a.id}`)).json.version, a2.version, 'nor the PATCHes');

      // Idempotency-Key: the same POST again replays the first answer and writes one row.
      const key = { 'idempotency-key': `flow-${randomUUID()}` };
      const first = await eng.post(path, c.body(d, 2), key);
      const again = await eng.post(path, c.body(d, 2), key);
      t.is(first.status, 201, first.text);
      t.is(again.status, 201, again.text);
      t.deepEqual(again.json, first.json);
      t.is(again.headers.location, first.headers.location);
      t.is(again.headers.etag, first.headers.etag);
      t.is(first.headers['idempotent-replayed'], undefined);
      t.is(again.headers['idempotent-replayed'], 'true');
      t.is(await countRows(w, c.resource.table), rows + 1, 'one row for the two POSTs');

      // Delete where the resource allows it (If-Match honoured), 405 where it does not.
      if (c.deletable) {
        const staleDelete = await eng.del(`${path}/${a.id}`, { 'if-match': `"${a1.version}"` });
        problem(t, staleDelete, 412, '/problems/stale-version', 'stale DELETE');
        t.is(staleDelete.json.version, a2.version);
        t.is((await eng.get(`${path}/${a.id}`)).status, 200, 'the stale DELETE deleted nothing');
        const gone = await eng.del(`${elsewhere}/${a.id}`, { 'if-match': `"${a2.version}"` });
        t.is(gone.status, 204, gone.text);
        t.is(gone.text, '');
        problem(t, await eng.get(`${path}/${a.id}`), 404, undefined, 'GET after DELETE');
        problem(t, await eng.del(`${path}/${a.id}`), 404, undefined, 'DELETE again');
        t.is(await countRows(w, c.resource.table, 'id = $2', [a.id]), 0);
      } else {
        const refused = await eng.del(`${path}/${a.id}`);
        problem(t, refused, 405, undefined, 'DELETE');
        t.false(String(refused.headers.allow).includes('DELETE'), 'Allow leaves DELETE out');
        t.true(String(refused.headers.allow).includes('PATCH'));
        t.is((await eng.get(`${path}/${a.id}`)).status, 200, 'still there');
      }
    });
  }
}

// ------------------------------------------------------------------------------------------------
// Refusals of each resource: roles, duplicate keys, references, other tenants

for (const c of CASES) {
  const path = `/${c.resource.path}`;

  test(`${path}: roles, duplicate keys, bad references and other tenants are refused`, async (t) => {
    const w = await world(t);
    const d = w.dA;
    const eng = w.a.engineer;
    const a = await create(eng, path, c.body(d, 0));
    const b = await create(eng, path, c.body(d, 1));
    const rows = await countRows(w, c.resource.table);

    // viewer and (for most) inspector may not write these; nothing is written, A stays as it was.
    for (const role of c.refused ?? (['viewer', 'inspector'] as const)) {
      const user = w.a[role];
      problem(
        t,
        await user.post(path, c.body(d, 2), { 'idempotency-key': `k-${role}` }),
        403,
        '/problems/role-not-allowed',
        `${role} POST`,
      );
      problem(
        t,
        await user.patch(`${path}/${a.id}`, c.change(d)),
        403,
        '/problems/role-not-allowed',
        `${role} PATCH`,
      );
      if (c.deletable) {
        problem(
          t,
          await user.del(`${path}/${a.id}`),
          403,
          '/problems/role-not-allowed',
          `${role} DELETE`,
        );
      }
    }
    t.is(await countRows(w, c.resource.table), rows, 'the refused roles wrote nothing');
    t.deepEqual((await eng.get(`${path}/${a.id}`)).json, a, 'item 0 unchanged');
    // The admin has the engineer's grants (so the 403s above were the role, not the request).
    t.is((await w.a.admin.post(path, c.body(d, 3))).status, 201);

    // A duplicate natural key: 409 naming its field(s), by POST and, where they may change, PATCH.
    if (c.naturalKey) {
      const key = c.naturalKey.map((f) => `/${f}`);
      const dup = await eng.post(path, c.body(d, 0));
      problem(t, dup, 409, '/problems/conflict', 'duplicate POST');
      t.deepEqual(sorted(pointers(dup)), sorted(key));
      if (c.naturalKey.every((f) => writableOnUpdate(c, f))) {
        const clash = await eng.patch(
          `${path}/${b.id}`,
          Object.fromEntries(c.naturalKey.map((f) => [f, a[f]])),
        );
        problem(t, clash, 409, '/problems/conflict', 'duplicate PATCH');
        t.deepEqual(sorted(pointers(clash)), sorted(key));
        t.deepEqual((await eng.get(`${path}/${b.id}`)).json, b, 'item 1 unchanged');
      }
    }

    // A reference to no row, or to another tenant's (invisible, so the same): 422 naming it.
    for (const ref of c.references) {
      const { field } = ref;
      const ours = d[ref.to][0]!;
      const theirs = w.dB[ref.to][0]!;
      const attempts: Array<[unknown, string, string]> = ref.list
        ? [
            [[randomUUID()], `/${field}/0`, 'a missing id'],
            [[ours, theirs], `/${field}/1`, "another tenant's id"],
          ]
        : [
            [randomUUID(), `/${field}`, 'a missing id'],
            [theirs, `/${field}`, "another tenant's id"],
          ];
      for (const [value, pointer, what] of attempts) {
        const label = `${field}: ${what}`;
        const posted = await eng.post(path, { ...c.body(d, 4), [field]: value });
        problem(t, posted, 422, '/problems/validation-failed', `POST ${label}`);
        t.deepEqual(pointers(posted), [pointer], `POST ${label}`);
        if (writableOnUpdate(c, field)) {
          const patched = await eng.patch(`${path}/${a.id}`, { [field]: value });
          problem(t, patched, 422, '/problems/validation-failed', `PATCH ${label}`);
          t.deepEqual(pointers(patched), [pointer], `PATCH ${label}`);
        }
      }
    }
    t.is(await countRows(w, c.resource.table), rows + 1, 'only the admin wrote a row');
    t.deepEqual((await eng.get(`${path}/${a.id}`)).json, a, 'item 0 still unchanged');

    // Another tenant's item (same natural key: keys are per tenant) is not found by its id.
    const theirs = await create(w.b, path, c.body(w.dB, 0));
    problem(t, await eng.get(`${path}/${theirs.id}`), 404, undefined, 'GET theirs');
    problem(t, await eng.patch(`${path}/${theirs.id}`, c.change(d)), 404, undefined, 'PATCH');
    if (c.deletable) problem(t, await eng.del(`${path}/${theirs.id}`), 404, undefined, 'DELETE');
    t.false(ids(await eng.get(`${path}?limit=500`)).includes(theirs.id), 'nor listed');
    problem(t, await w.b.get(`${path}/${a.id}`), 404, undefined, 'nor ours by them');
    t.deepEqual((await w.b.get(`${path}/${theirs.id}`)).json, theirs, 'theirs unchanged');
  });
}
