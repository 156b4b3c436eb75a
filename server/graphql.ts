// GraphQL for analysts: PostGraphile 5 reflecting the weld_public schema. What it shows is decided
// in the database (grants, row security, smart comments in migrations/); this file only chooses
// the presets and where requests meet the pool.
import { PgAggregatesPreset } from '@graphile/pg-aggregates';
import type pg from 'pg';
import { makePgService } from 'postgraphile/adaptors/pg';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { PostGraphileConnectionFilterPreset } from 'postgraphile-plugin-connection-filter';

export function graphqlPreset(pool: pg.Pool): GraphileConfig.Preset {
  return {
    extends: [PostGraphileAmberPreset, PgAggregatesPreset, PostGraphileConnectionFilterPreset],
    pgServices: [makePgService({ pool, schemas: ['weld_public'] })],
    schema: {
      // Aggregates only where a table opts in (`@aggregates on`: welds, NDT records, inspections).
      defaultBehavior: '-aggregates',
    },
  };
}
