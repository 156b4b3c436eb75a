--! Previous: sha1:6ac820554618c587e93afe79fbf6269eb79ccb3b
--! Hash: sha1:37d5cd7dee714f9fdcc8fc789eca9593351d21cc
--! Message: GraphQL: relation names and filters for analysts

-- GraphQL for analysts: plain relation names, and filters on the columns reports group by.

-- snake_case -> camelCase, for GraphQL names.
create or replace function weld_private.camel_case(name text) returns text
  language sql immutable
as $$
  select string_agg(case when i = 1 then part else initcap(part) end, '' order by i)
    from unnest(string_to_array(name, '_')) with ordinality as p(part, i)
$$;

-- Relations. Every foreign key is (tenant_id, <x>_id), so PostGraphile would name them
-- isoByTenantIdAndIsoId and weldsByTenantIdAndIsoId. Name them after the column instead:
-- weld.iso, iso.welds, weld.welder, welder.welds, ndtRecordWeld.weld, weld.ndtRecordWelds ...
-- (keys of other shapes keep the default names).
do $$
declare
  fk record;
begin
  for fk in
    select c.conname, c.conrelid::regclass as tbl, t.relname as table_name, a.attname as column_name
      from pg_catalog.pg_constraint c
      join pg_catalog.pg_class t on t.oid = c.conrelid
      join pg_catalog.pg_namespace n on n.oid = t.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[2]
     where c.contype = 'f' and n.nspname = 'weld_public' and array_length(c.conkey, 1) = 2
       and a.attname like '%\_id'
  loop
    execute format(
      'comment on constraint %I on %s is %L', fk.conname, fk.tbl,
      '@fieldName ' || weld_private.camel_case(left(fk.column_name, -3)) || E'\n' ||
      '@foreignFieldName ' || weld_private.camel_case(fk.table_name));
  end loop;
end
$$;

-- Filters. PostGraphile offers filters on indexed columns; these are not indexed but are what
-- reports filter and group by (always within one tenant, under the statement timeout).
comment on column weld_public.welds.type is '@behavior +filterBy';
comment on column weld_public.welds.size is '@behavior +filterBy';
comment on column weld_public.welds.repair_cycle is E'@behavior +filterBy\nFirst examination 0; each repair released (REJECTED -> REPAIR) adds 1.';
comment on column weld_public.welds.welded_on is '@behavior +filterBy';
comment on column weld_public.isos.fluid_service is '@behavior +filterBy';
comment on column weld_public.ndt_records.method is '@behavior +filterBy';
comment on column weld_public.ndt_records.result is '@behavior +filterBy';
comment on column weld_public.inspections.kind is '@behavior +filterBy';
comment on column weld_public.inspections.result is '@behavior +filterBy';
