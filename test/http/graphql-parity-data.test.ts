// GraphQL may do what REST may, for the same role, and no more (issue F6): for the project's data
// (ISOs, welds, welders, PQRs, WPSs, qualifications, test packages) and every role, the same
// write is tried both ways and must be refused both ways or allowed both ways; a WPS is never
// deleted. The shared machinery is in helpers/graphql-parity.ts.
import test from 'ava';
import {
  ROLES,
  COMPARED,
  world,
  restAttempt,
  create,
  update,
  remove,
  nodeIdOf,
  compare,
  engineerWrites,
} from '../helpers/graphql-parity.ts';

//------------------------------------------------------------------------------------------------
// The project's data: ISOs, welds, welders, PQRs, WPSs, qualifications, test packages

test('ISOs, welds, welders: create, update, delete are allowed over GraphQL exactly when over REST', async (t) => {
  const w = await world(t);
  for (const role of COMPARED) {
    const expected = engineerWrites(role);
    // ISOs
    compare(
      t,
      `create ISO as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/isos', { isoNumber: w.make.uniq('R'), lineNumber: 'L' }),
      ),
      await create(w, role, 'iso', { isoNumber: w.make.uniq('G'), lineNumber: 'L' }),
    );
    const iso = await w.make.iso();
    compare(
      t,
      `update ISO as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/api/isos/${iso}`, { area: 'REST' })),
      await update(w, role, 'iso', await nodeIdOf(w, 'iso', { rowId: iso }), { area: 'GQL' }),
    );
    const [isoR, isoG] = [await w.make.iso(), await w.make.iso()];
    compare(
      t,
      `delete ISO as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'DELETE', `/isos/${isoR}`)),
      await remove(w, role, 'iso', await nodeIdOf(w, 'iso', { rowId: isoG })),
    );

    // Welds (never deleted: voided instead)
    const host = await w.make.iso();
    const weld = { isoId: host, type: 'BW' };
    compare(
      t,
      `create weld as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/welds', { ...weld, size: 4, weldNumber: w.make.uniq('R') }),
      ),
      await create(w, role, 'weld', { ...weld, size: '4', weldNumber: w.make.uniq('G') }),
    );
    const existing = await w.make.weld();
    const weldNode = await nodeIdOf(w, 'weld', { rowId: existing });
    compare(
      t,
      `update weld as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/welds/${existing}`, { material: 'A106-B' })),
      await update(w, role, 'weld', weldNode, { material: 'A105' }),
    );
    compare(
      t,
      `delete weld as ${role}`,
      'absent',
      restAttempt(await w.rest(role, 'DELETE', `/api/welds/${existing}`)),
      await remove(w, role, 'weld', weldNode),
    );

    // Welders (deactivated, never deleted)
    compare(
      t,
      `create welder as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/welders', { stamp: w.make.uniq('R'), name: 'Rest' }),
      ),
      await create(w, role, 'welder', { stamp: w.make.uniq('G'), name: 'Graph' }),
    );
    const welder = await w.make.welder();
    const welderNode = await nodeIdOf(w, 'welder', { rowId: welder });
    compare(
      t,
      `update welder as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/welders/${welder}`, { active: false })),
      await update(w, role, 'welder', welderNode, { name: 'Renamed' }),
    );
    compare(
      t,
      `delete welder as ${role}`,
      'absent',
      restAttempt(await w.rest(role, 'DELETE', `/welders/${welder}`)),
      await remove(w, role, 'welder', welderNode),
    );
  }
  // Whatever was refused left the welders and welds in place.
  const { rows } = await w.owner.query<{ n: number }>(
    'select count(*)::int as n from weld_public.welders where tenant_id = $1',
    [w.tenant],
  );
  t.is(
    rows[0]!.n,
    COMPARED.length + 2,
    'one made per role, plus one created each way by the engineer',
  );
});

test('PQRs, WPSs and their PQR links: allowed over GraphQL exactly when over REST; a WPS is never deleted', async (t) => {
  const w = await world(t);
  for (const role of COMPARED) {
    const expected = engineerWrites(role);
    const pqr = { process: 'GTAW', pNumbers: ['1', '1'] };
    compare(
      t,
      `create PQR as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/pqrs', {
          ...pqr,
          pqrNumber: w.make.uniq('R'),
          thicknessTestedIn: 0.5,
        }),
      ),
      await create(w, role, 'pqr', {
        ...pqr,
        pqrNumber: w.make.uniq('G'),
        thicknessTestedIn: '0.5',
      }),
    );
    const existingPqr = await w.make.pqr();
    compare(
      t,
      `update PQR as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/pqrs/${existingPqr}`, { documentRef: 'R' })),
      await update(w, role, 'pqr', await nodeIdOf(w, 'pqr', { rowId: existingPqr }), {
        documentRef: 'G',
      }),
    );
    const [pqrR, pqrG] = [await w.make.pqr(), await w.make.pqr()];
    compare(
      t,
      `delete PQR as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'DELETE', `/api/pqrs/${pqrR}`)),
      await remove(w, role, 'pqr', await nodeIdOf(w, 'pqr', { rowId: pqrG })),
    );

    compare(
      t,
      `create WPS as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/wps', { wpsNumber: w.make.uniq('R'), process: 'GTAW' }),
      ),
      await create(w, role, 'wps', { wpsNumber: w.make.uniq('G'), process: 'GTAW' }),
    );
    const wps = await w.make.wps();
    const wpsNode = await nodeIdOf(w, 'wps', { rowId: wps });
    compare(
      t,
      `update WPS as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/wps/${wps}`, { thicknessMinIn: 0.2 })),
      await update(w, role, 'wps', wpsNode, { thicknessMinIn: '0.1' }),
    );

    // The PQRs that back a WPS: REST replaces pqrIds; GraphQL adds and removes link rows. Each
    // way works on a WPS of its own, so one cannot undo what the other is about to try.
    const [wpsR, wpsG] = [wps, await w.make.wps()];
    const [keptR, keptG, addedR, addedG] = [
      await w.make.pqr(),
      await w.make.pqr(),
      await w.make.pqr(),
      await w.make.pqr(),
    ];
    await w.make.link('wps_pqrs', ['wps_id', 'pqr_id'], [wpsR, keptR]);
    await w.make.link('wps_pqrs', ['wps_id', 'pqr_id'], [wpsG, keptG]);
    compare(
      t,
      `link a PQR to a WPS as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/wps/${wpsR}`, { pqrIds: [keptR, addedR] })),
      await create(w, role, 'wpsPqr', { wpsId: wpsG, pqrId: addedG }),
    );
    compare(
      t,
      `unlink a PQR from a WPS as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/api/wps/${wpsR}`, { pqrIds: [] })),
      await remove(w, role, 'wpsPqr', await nodeIdOf(w, 'wpsPqr', { wpsId: wpsG, pqrId: keptG })),
    );
    const links = await w.owner.query<{ wps_id: string; pqr_id: string }>(
      'select wps_id, pqr_id from weld_public.wps_pqrs where wps_id = any($1) order by wps_id',
      [[wpsR, wpsG]],
    );
    t.deepEqual(
      links.rows.map((l) => [l.wps_id, l.pqr_id]).sort(),
      (role === 'engineer'
        ? [[wpsG, addedG]]
        : [
            [wpsR, keptR],
            [wpsG, keptG],
          ]
      ).sort(),
      `the PQR links after ${role}`,
    );
  }
  // A WPS is superseded, never deleted: REST has no DELETE, and GraphQL none that works.
  for (const role of ROLES) {
    const wps = await w.make.wps();
    const res = await w.rest(role, 'DELETE', `/wps/${wps}`);
    t.is(res.status, 405, `REST DELETE /wps as ${role}`);
    const attempt = await remove(w, role, 'wps', await nodeIdOf(w, 'wps', { rowId: wps }));
    t.true(
      ['absent', 'refused'].includes(attempt.outcome),
      `delete WPS as ${role}: ${attempt.detail}`,
    );
    const left = await w.owner.query('select from weld_public.wps where id = $1', [wps]);
    t.is(left.rowCount, 1, `the WPS is still there after ${role}`);
  }
});

test('welder qualifications and test packages with their ISOs and welds: GraphQL like REST', async (t) => {
  const w = await world(t);
  for (const role of COMPARED) {
    const expected = engineerWrites(role);
    const welder = await w.make.welder();
    compare(
      t,
      `create qualification as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/welder-qualifications', {
          welderId: welder,
          process: 'SMAW',
          qualifiedOn: '2026-02-01',
        }),
      ),
      await create(w, role, 'welderQualification', {
        welderId: welder,
        process: 'GTAW',
        qualifiedOn: '2026-02-01',
      }),
    );
    const qualification = await w.make.qualification();
    compare(
      t,
      `update qualification as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'PATCH', `/welder-qualifications/${qualification}`, {
          expiresOn: '2028-01-01',
        }),
      ),
      await update(
        w,
        role,
        'welderQualification',
        await nodeIdOf(w, 'welderQualification', { rowId: qualification }),
        { expiresOn: '2029-01-01' },
      ),
    );
    const [qR, qG] = [await w.make.qualification(), await w.make.qualification()];
    compare(
      t,
      `delete qualification as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'DELETE', `/welder-qualifications/${qR}`)),
      await remove(
        w,
        role,
        'welderQualification',
        await nodeIdOf(w, 'welderQualification', { rowId: qG }),
      ),
    );

    compare(
      t,
      `create test package as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/test-packages', {
          packageNumber: w.make.uniq('R'),
          testMedium: 'hydro',
        }),
      ),
      await create(w, role, 'testPackage', {
        packageNumber: w.make.uniq('G'),
        testMedium: 'pneumatic',
      }),
    );
    const pkg = await w.make.testPackage();
    compare(
      t,
      `update test package as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'PATCH', `/api/test-packages/${pkg}`, { testPressurePsig: 150 }),
      ),
      await update(w, role, 'testPackage', await nodeIdOf(w, 'testPackage', { rowId: pkg }), {
        testPressurePsig: '225',
      }),
    );
    const [pkgR, pkgG] = [await w.make.testPackage(), await w.make.testPackage()];
    compare(
      t,
      `delete test package as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'DELETE', `/test-packages/${pkgR}`)),
      await remove(w, role, 'testPackage', await nodeIdOf(w, 'testPackage', { rowId: pkgG })),
    );

    // Membership: REST replaces isoIds / weldIds; GraphQL adds and removes link rows, each way
    // on a package of its own.
    for (const [table, link, member, column, list] of [
      ['testPackageIso', 'test_package_isos', () => w.make.iso(), 'isoId', 'isoIds'],
      ['testPackageWeld', 'test_package_welds', () => w.make.weld(), 'weldId', 'weldIds'],
    ] as const) {
      const [pkgR, pkgG] = [await w.make.testPackage(), await w.make.testPackage()];
      const [keptR, keptG, addedR, addedG] = [
        await member(),
        await member(),
        await member(),
        await member(),
      ];
      const dbColumn = column === 'isoId' ? 'iso_id' : 'weld_id';
      await w.make.link(link, ['test_package_id', dbColumn], [pkgR, keptR]);
      await w.make.link(link, ['test_package_id', dbColumn], [pkgG, keptG]);
      compare(
        t,
        `add to a test package's ${list} as ${role}`,
        expected,
        restAttempt(
          await w.rest(role, 'PATCH', `/test-packages/${pkgR}`, { [list]: [keptR, addedR] }),
        ),
        await create(w, role, table, { testPackageId: pkgG, [column]: addedG }),
      );
      compare(
        t,
        `remove from a test package's ${list} as ${role}`,
        expected,
        restAttempt(await w.rest(role, 'PATCH', `/test-packages/${pkgR}`, { [list]: [] })),
        await remove(
          w,
          role,
          table,
          await nodeIdOf(w, table, { testPackageId: pkgG, [column]: keptG }),
        ),
      );
      const members = await w.owner.query<{ package: string; member: string }>(
        `select test_package_id as package, ${dbColumn} as member from weld_public.${link}
          where test_package_id = any($1)`,
        [[pkgR, pkgG]],
      );
      t.deepEqual(
        members.rows.map((m) => [m.package, m.member]).sort(),
        (role === 'engineer'
          ? [[pkgG, addedG]]
          : [
              [pkgR, keptR],
              [pkgG, keptG],
            ]
        ).sort(),
        `the ${list} after ${role}`,
      );
    }
  }
});
