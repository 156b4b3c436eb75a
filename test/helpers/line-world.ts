// The line world of the code rules tests over HTTP (test/http/code-rules-*.test.ts): line L-100
// of 40 butt welds by 3 qualified welders over ISO-1 and ISO-2, and ISO-200 of 10 BW and 2 SW
// welds, built as a client would (helpers/rules-http.ts).
import { inBatches, type World } from './rules-http.ts';

export interface LineWorld {
  iso1: string;
  iso2: string;
  /** L-200: rtPercent 20, 10 butt welds and 2 socket welds, all of welder W1. */
  iso200: string;
  welders: string[];
  wpsId: string;
  welds: Array<{ id: string; weldNumber: string; welderId: string; isoId: string; type: string }>;
}

/**
 * Line L-100 with ISO-1 and ISO-2, 20 butt welds each, made by welders W1, W2 and W3 in turn
 * (14, 13 and 13 welds); and line L-200 with one ISO at rtPercent 20 (10 butt and 2 socket welds
 * of W1). All qualified, on an approved WPS.
 */
export async function lineWorld(w: World): Promise<LineWorld> {
  const iso1 = (await w.make.iso('ISO-1', 'L-100')).id;
  const iso2 = (await w.make.iso('ISO-2', 'L-100')).id;
  const iso200 = (await w.make.iso('ISO-200', 'L-200', { rtPercent: 20 })).id;
  const welders: string[] = [];
  for (const stamp of ['W1', 'W2', 'W3']) welders.push((await w.make.welder(stamp)).id);
  const wpsId = (await w.make.wps('WPS-1')).id;
  for (const welderId of welders) await w.make.qualification(welderId);
  const welds: LineWorld['welds'] = [];
  const specs = [
    ...Array.from({ length: 40 }, (_, i) => ({
      isoId: i < 20 ? iso1 : iso2,
      weldNumber: `L100-${String(i + 1).padStart(2, '0')}`,
      welderId: welders[i % 3]!,
      type: 'BW',
    })),
    ...Array.from({ length: 12 }, (_, i) => ({
      isoId: iso200,
      weldNumber: `L200-${String(i + 1).padStart(2, '0')}`,
      welderId: welders[0]!,
      type: i < 10 ? 'BW' : 'SW',
    })),
  ];
  await inBatches(specs, 8, async (spec) => {
    const weld = await w.make.weld({ ...spec, wpsId });
    welds.push({ id: weld.id, ...spec });
  });
  return { iso1, iso2, iso200, welders, wpsId, welds };
}
