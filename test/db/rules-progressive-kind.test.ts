// B31.3 341.3.4(a), progressive examination "of the same kind": a rejected weld draws two more of
// the same welder, the same lot and the same kind as 341.4.1 groups them (groove, socket, fillet),
// and says so when fewer are left than it asks. A worked example, then a property over random lots.
import test from 'ava';
import fc from 'fast-check';
import { rulesWorld, type RulesWorld } from '../helpers/rules.ts';

const KINDS = { BW: 'groove', BR: 'groove', TW: 'groove', SW: 'socket', FW: 'fillet' } as const;
type WeldType = keyof typeof KINDS;

/** Welds of one welder on one line, numbered per type (S-01, F-01, B-01, ...). */
async function welds(
  w: RulesWorld,
  isoId: string,
  welderId: string,
  wpsId: string,
  type: WeldType,
  count: number,
  prefix: string,
) {
  return w.weldsOf(w.a, isoId, welderId, prefix, count, {
    wps_id: wpsId,
    type,
    size: type === 'SW' || type === 'FW' ? 1 : 4,
  });
}

test('341.3.4(a): a rejected socket weld draws two more socket welds of its welder, not their fillet or butt welds; a tier with fewer left says so', async (t) => {
  const w = await rulesWorld(t);
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const isoId = await w.iso(fx, 'ISO-K', 'L-K');
  const welderId = await w.qualifiedWelder(fx, 'W1', wpsId);
  const sockets = await welds(w, isoId, welderId, wpsId, 'SW', 4, 'S');
  const fillets = await welds(w, isoId, welderId, wpsId, 'FW', 3, 'F');
  const butts = await welds(w, isoId, welderId, wpsId, 'BW', 4, 'B');

  // The visual inspection rejects S-01: it counts toward the VT lot (every weld of the line) and
  // draws tier 1 from the welder's other socket welds.
  await w.recordInspection(fx, 'visual', [sockets[0]!], 'rejected');
  const tier = async (name: string) =>
    (await w.selections(fx)).filter((s) => s.method === 'VT' && s.tier === name);
  const tier1 = await tier('1');
  t.is(tier1.length, 2);
  t.true(
    tier1.every((s) => sockets.includes(s.weld_id)),
    'socket welds only',
  );
  t.regex(
    tier1[0]!.reason,
    /^tier 1: the visual inspection of 2026-02-10 rejected weld S-01 on ISO ISO-K \(examined selection\); two more socket welds of welder W1 in VT 5% of line L-K$/,
  );
  const [examined] = (await w.selections(fx)).filter((s) => s.tier === 'examined');
  t.is(examined!.weld_id, sockets[0]!);
  t.false(
    (await w.selections(fx)).some((s) => [...fillets, ...butts].includes(s.weld_id)),
    'no fillet or butt weld drawn',
  );

  // One of them rejected: tier 2 asks two more socket welds; one is left.
  await w.recordInspection(fx, 'visual', [tier1[0]!.weld_id], 'rejected', '2026-02-11');
  const tier2 = await tier('2');
  t.is(tier2.length, 1);
  t.true(sockets.includes(tier2[0]!.weld_id));
  const [cause] = await w.sqlAs<{ shortfall: string | null }>(
    fx,
    'viewer',
    'select shortfall from weld_public.examination_selections where id = $1',
    [tier1[0]!.id],
  );
  t.is(
    cause!.shortfall,
    'tier 2 asks for two more socket welds of welder W1 in VT 5% of line L-K; only 1 is left',
  );
  // The other tier-1 weld rejected: none is left at all, and that is said too.
  await w.recordInspection(fx, 'visual', [tier1[1]!.weld_id], 'rejected', '2026-02-11');
  const [second] = await w.sqlAs<{ shortfall: string | null }>(
    fx,
    'viewer',
    'select shortfall from weld_public.examination_selections where id = $1',
    [tier1[1]!.id],
  );
  t.is(
    second!.shortfall,
    'tier 2 asks for two more socket welds of welder W1 in VT 5% of line L-K; none is left',
  );
  t.is((await tier('2')).length, 1);

  // A rejected fillet weld draws the fillet welds.
  await w.recordInspection(fx, 'visual', [fillets[0]!], 'rejected');
  const fillet1 = (await tier('1')).filter((s) => fillets.includes(s.weld_id));
  t.is(fillet1.length, 2);
});

test('property: for random lots of several welders and kinds, every progressive tier holds only welds of the rejected weld\u2019s kind and welder', async (t) => {
  const w = await rulesWorld(t);
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const welders = [
    await w.qualifiedWelder(fx, 'W1', wpsId),
    await w.qualifiedWelder(fx, 'W2', wpsId),
  ];
  let lines = 0;
  const types = Object.keys(KINDS) as WeldType[];
  const lot = fc.array(
    fc.record({
      welder: fc.integer({ min: 0, max: 1 }),
      type: fc.constantFrom(...types),
      count: fc.integer({ min: 1, max: 4 }),
    }),
    { minLength: 2, maxLength: 6 },
  );
  await fc.assert(
    fc.asyncProperty(lot, fc.nat(), fc.boolean(), async (groups, pick, deeper) => {
      const line = `P-${++lines}`;
      const isoId = await w.iso(fx, `ISO-${line}`, line);
      const made: Array<{ id: string; welder: string; kind: string }> = [];
      for (const [i, g] of groups.entries()) {
        const ids = await welds(
          w,
          isoId,
          welders[g.welder]!,
          wpsId,
          g.type,
          g.count,
          `${line}-${i}`,
        );
        made.push(...ids.map((id) => ({ id, welder: welders[g.welder]!, kind: KINDS[g.type] })));
      }
      const byId = new Map(made.map((m) => [m.id, m]));
      const rejected = made[pick % made.length]!;
      await w.recordInspection(fx, 'visual', [rejected.id], 'rejected');
      const selections = async () =>
        (await w.selections(fx)).filter((s) => byId.has(s.weld_id) && s.method === 'VT');
      const tier1 = (await selections()).filter((s) => s.tier === '1');
      if (deeper && tier1.length) {
        await w.recordInspection(fx, 'visual', [tier1[0]!.weld_id], 'rejected', '2026-02-11');
      }
      for (const s of (await selections()).filter((x) => ['1', '2', 'full'].includes(x.tier))) {
        const weld = byId.get(s.weld_id)!;
        if (weld.kind !== rejected.kind || weld.welder !== rejected.welder) return false;
      }
      // As many as there were of that kind and welder, up to two.
      const same = made.filter(
        (m) => m.id !== rejected.id && m.kind === rejected.kind && m.welder === rejected.welder,
      );
      return tier1.length === Math.min(2, same.length);
    }),
    { numRuns: 12, seed: 20261204 },
  );
  t.pass();
});
