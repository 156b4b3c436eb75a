--! Previous: sha1:2171ba5c3155b6c5fc87f78fc3ac07ff4ca49270
--! Hash: sha1:8c7e043f1659e5be6b37966813abf6c49c5d1577
--! Message: verdicts a QC department signs: repairs, acceptance bases, editions

-- Verdicts a QC department signs: repairs as records (their date welded, welder, WPS and
-- preheat), a status that is not ACCEPTED while an examination of the weld is owed, every
-- acceptance with its basis, progressive examination by the kind of weld, preheat judged by
-- B31.3 Table 330.1.1, heat treatment by the tenant's code edition with the exemptions of Table
-- 331.1.3 and a repair after PWHT owing a new one, a WPS covering several joints (QW-424.1),
-- category D without random RT, and the repair rate of random examinations by month examined,
-- with defect lengths and a minimum sample before an alert.

------------------------------------------------------------------------------------------------
-- 1. The tenant's code edition and the repair rate's minimum sample.
alter table weld_public.tenant_settings
  add column if not exists code_edition text not null default 'B31.3-2022'
  check (code_edition in ('B31.3-2022', 'B31.3-2012'));
comment on column weld_public.tenant_settings.code_edition is
  'The edition of ASME B31.3 the tenant''s project is built to: B31.3-2022 (default) or B31.3-2012. The preheat, heat treatment, hardness and exemption rows of that edition apply, never two mixed.';
alter table weld_public.tenant_settings
  add column if not exists repair_rate_min_examined integer not null default 10
  check (repair_rate_min_examined between 1 and 10000);
comment on column weld_public.tenant_settings.repair_rate_min_examined is
  'The fewest welds of a welder examined in a month before their repair rate may raise an alert (default 10).';

------------------------------------------------------------------------------------------------
-- 2. Repairs as records. A weld released for repair (REJECTED -> REPAIR) gets its repair cycle's
--    row; when it is re-welded (REPAIR -> PENDING), the inspector records the day it was welded,
--    who welded it with which WPS (its repair WPS) and the preheat, then or later.
create table if not exists weld_public.weld_repairs (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  id            uuid not null default gen_random_uuid(),
  weld_id       uuid not null,
  repair_cycle  integer not null check (repair_cycle >= 1),
  released_at   timestamptz not null default now(),
  released_by   uuid,
  rewelded_at   timestamptz,
  welded_on     date,
  welder_id     uuid,
  wps_id        uuid,
  preheat_f     integer check (preheat_f between 0 and 1500),
  version       integer not null default 1 check (version >= 1),
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint weld_repairs_cycle_key unique (tenant_id, weld_id, repair_cycle),
  constraint weld_repairs_weld_fkey
    foreign key (tenant_id, weld_id) references weld_public.welds on delete cascade,
  constraint weld_repairs_released_by_fkey
    foreign key (tenant_id, released_by) references weld_public.users,
  constraint weld_repairs_welder_fkey
    foreign key (tenant_id, welder_id) references weld_public.welders,
  constraint weld_repairs_wps_fkey
    foreign key (tenant_id, wps_id) references weld_public.wps
);
select weld_private.add_calendar_check('weld_public.weld_repairs', 'welded_on');
create index if not exists weld_repairs_welder_idx on weld_public.weld_repairs (tenant_id, welder_id);
create index if not exists weld_repairs_wps_idx on weld_public.weld_repairs (tenant_id, wps_id);
comment on table weld_public.weld_repairs is
  E'@aggregates on\nA repair cycle of a weld: released for repair (REJECTED -> REPAIR), then re-welded (REPAIR -> PENDING) on its own date, by its own welder, with its own WPS and preheat (B31.3 328.6).';
comment on column weld_public.weld_repairs.repair_cycle is 'Which repair of the weld it is: 1 for the first.';
comment on column weld_public.weld_repairs.released_at is 'When the weld was released for this repair (REJECTED -> REPAIR).';
comment on column weld_public.weld_repairs.released_by is 'The user who released it for repair.';
comment on column weld_public.weld_repairs.rewelded_at is 'When the repair was reported welded (REPAIR -> PENDING); null while the weld is in REPAIR.';
comment on column weld_public.weld_repairs.welded_on is 'The day the repair was welded; null: not recorded (DATA_MISSING once re-welded). On or after the day the weld was made. Re-examinations, PWHT and continuity count from it.';
comment on column weld_public.weld_repairs.welder_id is 'The welder who made the repair; null: not recorded (DATA_MISSING once re-welded).';
comment on column weld_public.weld_repairs.wps_id is 'The WPS the repair was welded to (its repair WPS); null: the weld''s own WPS.';
comment on column weld_public.weld_repairs.preheat_f is 'The minimum preheat temperature recorded for the repair, in degrees Fahrenheit (B31.3 330).';
comment on constraint weld_repairs_weld_fkey on weld_public.weld_repairs is
  E'@fieldName weld\n@foreignFieldName repairs';
comment on constraint weld_repairs_released_by_fkey on weld_public.weld_repairs is
  E'@fieldName releaser\n@foreignFieldName weldRepairsReleased';
comment on constraint weld_repairs_welder_fkey on weld_public.weld_repairs is
  E'@fieldName welder\n@foreignFieldName repairs';
comment on constraint weld_repairs_wps_fkey on weld_public.weld_repairs is
  E'@fieldName wps\n@foreignFieldName repairs';

-- The repairs the history already tells: each release for repair, and its re-weld. What the
-- history never held (the day welded, the welder, the WPS) stays unknown: DATA_MISSING says so.
insert into weld_public.weld_repairs (tenant_id, weld_id, repair_cycle, released_at, released_by,
                                      rewelded_at, created_at, updated_at)
select h.tenant_id, h.weld_id, h.repair_cycle, h.changed_at, h.changed_by,
       (select min(x.changed_at) from weld_public.weld_status_history x
         where x.tenant_id = h.tenant_id and x.weld_id = h.weld_id and x.repair_cycle = h.repair_cycle
           and x.from_status = 'REPAIR' and x.to_status <> 'VOIDED'),
       h.changed_at, h.changed_at
  from weld_public.weld_status_history h
 where h.from_status = 'REJECTED' and h.to_status = 'REPAIR'
on conflict do nothing;

------------------------------------------------------------------------------------------------
-- 3. Every acceptance with its basis: an NDT record or an inspection that accepted the weld, or
--    an engineer's documented disposition. The weld shows its current one; the history each.
alter table weld_public.welds add column if not exists acceptance_ndt_record_id uuid;
alter table weld_public.welds add column if not exists acceptance_inspection_id uuid;
alter table weld_public.welds add column if not exists acceptance_disposition text;
alter table weld_public.welds drop constraint if exists welds_acceptance_ndt_record_fkey;
alter table weld_public.welds add constraint welds_acceptance_ndt_record_fkey
  foreign key (tenant_id, acceptance_ndt_record_id) references weld_public.ndt_records;
alter table weld_public.welds drop constraint if exists welds_acceptance_inspection_fkey;
alter table weld_public.welds add constraint welds_acceptance_inspection_fkey
  foreign key (tenant_id, acceptance_inspection_id) references weld_public.inspections;
alter table weld_public.welds drop constraint if exists welds_acceptance_basis;
alter table weld_public.welds add constraint welds_acceptance_basis check (
  num_nonnulls(acceptance_ndt_record_id, acceptance_inspection_id, acceptance_disposition) <= 1
  and (status = 'ACCEPTED'
       or num_nonnulls(acceptance_ndt_record_id, acceptance_inspection_id, acceptance_disposition) = 0)
  and char_length(acceptance_disposition) between 1 and 2000);
comment on constraint welds_acceptance_basis on weld_public.welds is
  'an accepted weld rests on one NDT record, inspection or disposition; a weld not accepted on none';
create index if not exists welds_acceptance_ndt_record_idx on weld_public.welds (tenant_id, acceptance_ndt_record_id)
  where acceptance_ndt_record_id is not null;
create index if not exists welds_acceptance_inspection_idx on weld_public.welds (tenant_id, acceptance_inspection_id)
  where acceptance_inspection_id is not null;
comment on column weld_public.welds.acceptance_ndt_record_id is
  'While ACCEPTED: the NDT record that accepted it (its result, or the basis an inspector named).';
comment on column weld_public.welds.acceptance_inspection_id is
  'While ACCEPTED: the inspection that accepted it, named as the basis of the acceptance.';
comment on column weld_public.welds.acceptance_disposition is
  'While ACCEPTED: the engineer''s documented disposition it was accepted on (a use-as-is decision, its reference).';
comment on constraint welds_acceptance_ndt_record_fkey on weld_public.welds is
  E'@fieldName acceptanceNdtRecord\n@foreignFieldName weldsAccepted';
comment on constraint welds_acceptance_inspection_fkey on weld_public.welds is
  E'@fieldName acceptanceInspection\n@foreignFieldName weldsAccepted';
grant select (acceptance_ndt_record_id, acceptance_inspection_id, acceptance_disposition)
   on weld_public.welds to weld_viewer, weld_reporting, weld_rules;
grant update (acceptance_ndt_record_id, acceptance_inspection_id, acceptance_disposition)
   on weld_public.welds to weld_rules;

alter table weld_public.weld_status_history add column if not exists inspection_id uuid;
alter table weld_public.weld_status_history add column if not exists disposition text
  check (char_length(disposition) between 1 and 2000);
alter table weld_public.weld_status_history drop constraint if exists weld_status_history_inspection_fkey;
alter table weld_public.weld_status_history add constraint weld_status_history_inspection_fkey
  foreign key (tenant_id, inspection_id) references weld_public.inspections;
-- An NDT record names the cause of an NDT result's move, or the basis of a person's acceptance.
alter table weld_public.weld_status_history drop constraint if exists weld_status_history_ndt_cause;
alter table weld_public.weld_status_history add constraint weld_status_history_ndt_cause
  check (cause <> 'ndt' or ndt_record_id is not null);
alter table weld_public.weld_status_history drop constraint if exists weld_status_history_basis;
alter table weld_public.weld_status_history add constraint weld_status_history_basis
  check (num_nonnulls(ndt_record_id, inspection_id, disposition) <= 1);
comment on column weld_public.weld_status_history.ndt_record_id is
  'The NDT record whose result caused the change (cause ndt), or that a person''s acceptance rests on.';
comment on column weld_public.weld_status_history.inspection_id is
  'The inspection an acceptance rests on.';
comment on column weld_public.weld_status_history.disposition is
  'The engineer''s documented disposition an acceptance rests on.';
comment on constraint weld_status_history_inspection_fkey on weld_public.weld_status_history is
  E'@fieldName inspection\n@foreignFieldName weldStatusChanges';
create index if not exists weld_status_history_inspection_idx on weld_public.weld_status_history (tenant_id, inspection_id)
  where inspection_id is not null;

------------------------------------------------------------------------------------------------
-- 4. What examinations say more: the length of a defect (for the repair rate by length), an
--    acceptance an NDT result could not give (the weld still owed another examination), a tier
--    that found fewer welds than it asks.
alter table weld_public.ndt_record_welds add column if not exists defect_length_in numeric(6, 3)
  check (defect_length_in > 0 and defect_length_in <> 'NaN');
alter table weld_public.ndt_record_welds add column if not exists acceptance_held text
  check (char_length(acceptance_held) between 1 and 2000);
comment on column weld_public.ndt_record_welds.defect_length_in is
  'The length of the defects this examination found in the weld, in inches (for the repair rate by length).';
comment on column weld_public.ndt_record_welds.acceptance_held is
  'Why this record''s acceptance did not move the weld to ACCEPTED: another examination of it is still owed (B31.3 341.3.3).';
alter table weld_public.film_intervals add column if not exists defect_length_in numeric(6, 3)
  check (defect_length_in > 0 and defect_length_in <> 'NaN');
comment on column weld_public.film_intervals.defect_length_in is
  'The length of the defects in this interval, in inches (for the repair rate by length).';
alter table weld_public.examination_selections add column if not exists shortfall text
  check (char_length(shortfall) between 1 and 500);
comment on column weld_public.examination_selections.shortfall is
  'Set on a rejected selection whose next progressive tier found fewer welds of the same kind and welder in the lot than it asks for.';

------------------------------------------------------------------------------------------------
-- 5. Category D is visual only (B31.3 341.4.2): an ISO's own RT percent is what its piping class
--    asks beyond the code's floors, none by default. Category D ISOs that had the old default
--    (5) lose it (below, with the other data); the examination rules give every other service its
--    floor.
alter table weld_public.isos alter column rt_percent set default 0;
comment on column weld_public.isos.rt_percent is
  'The RT percent its piping class asks for its butt welds beyond the code''s floor (0 by default): it raises RT where greater than the examination rules.';

------------------------------------------------------------------------------------------------
-- 6. What a WPS says of preheat and PWHT (QW-406.1, QW-407.1), the joints it covers beyond its
--    first (QW-424.1), and a fillet weld's throat (Table 331.1.3's limits). (A weld's preheat,
--    recorded since 000038, is now judged, and the register imports and exports it: preheatF.)
alter table weld_public.wps add column if not exists preheat_min_f integer
  check (preheat_min_f between 0 and 1500);
alter table weld_public.wps add column if not exists pwht_required boolean;
alter table weld_public.wps add column if not exists additional_joints text[];
alter table weld_public.wps drop constraint if exists wps_additional_joints_format;
alter table weld_public.wps add constraint wps_additional_joints_format check (
  array_ndims(additional_joints) = 1 and array_lower(additional_joints, 1) = 1
  and cardinality(additional_joints) >= 1 and cardinality(additional_joints) <= 20
  and array_to_string(additional_joints, ',', '?')
      ~ '^[0-9]{1,3}[A-Z]?-[0-9]{1,3}[A-Z]?(,[0-9]{1,3}[A-Z]?-[0-9]{1,3}[A-Z]?)*$');
comment on constraint wps_additional_joints_format on weld_public.wps is
  'must be a joint of two P-numbers, P-P (4-1 for P-No. 4 to P-No. 1)';
alter table weld_public.wps drop constraint if exists wps_additional_joints_beside_first;
alter table weld_public.wps add constraint wps_additional_joints_beside_first
  check (additional_joints is null or p_numbers is not null);
comment on constraint wps_additional_joints_beside_first on weld_public.wps is
  'additional joints are beside the joint its P-numbers name: give pNumbers first';
comment on column weld_public.wps.preheat_min_f is
  'The minimum preheat the WPS asks, in degrees Fahrenheit; a weld''s preheat is held to it where it is above B31.3 Table 330.1.1''s.';
comment on column weld_public.wps.pwht_required is
  'true: the WPS is qualified with PWHT (QW-407.1), so its welds need it whatever the wall; false: as-welded, so the exemptions of B31.3 Table 331.1.3 may apply; null: not recorded (no exemption applies).';
comment on column weld_public.wps.additional_joints is
  'The joints it covers beyond the one its P-numbers name, each P-P (4-3, 4-1), each qualified by one of its PQRs (QW-424.1); null: none.';
grant insert (preheat_min_f, pwht_required, additional_joints),
      update (preheat_min_f, pwht_required, additional_joints)
   on weld_public.wps to weld_engineer;

alter table weld_public.welds add column if not exists throat_in numeric(6, 3);
alter table weld_public.welds drop constraint if exists welds_throat_in_is_a_number;
alter table weld_public.welds add constraint welds_throat_in_is_a_number check (throat_in <> 'NaN');
alter table weld_public.welds drop constraint if exists welds_throat_in_check;
alter table weld_public.welds add constraint welds_throat_in_check check (throat_in > 0);
alter table weld_public.welds drop constraint if exists welds_throat_of_fillets;
alter table weld_public.welds add constraint welds_throat_of_fillets
  check (throat_in is null or type in ('SW', 'FW'));
comment on constraint welds_throat_of_fillets on weld_public.welds is
  'a throat thickness is that of a socket or fillet weld (SW, FW)';
comment on column weld_public.welds.throat_in is
  'The throat thickness of a socket or fillet weld, in inches (B31.3 Table 331.1.3).';
grant select (throat_in) on weld_public.welds to weld_viewer, weld_reporting, weld_rules;
grant insert (throat_in), update (throat_in) on weld_public.welds to weld_engineer;

alter table weld_public.pwht_records add column if not exists heating text
  check (heating in ('furnace', 'local'));
comment on column weld_public.pwht_records.heating is
  'furnace (a batch in a furnace) or local (bands or pads at each weld); null: not recorded, judged as local (B31.3 331.1.7 asks hardness of every locally treated weld, 10% of a furnace batch).';
grant insert (heating), update (heating) on weld_public.pwht_records to weld_inspector;

------------------------------------------------------------------------------------------------
-- 7. The code's tables by edition: Table 331.1.1 (heat treatment) gains its edition; Table
--    330.1.1 (preheat) and Table 331.1.3 (exemptions from PWHT) are new. Seeded for every
--    tenant, both editions (weld_private.seed_code_rules); a DBA edits the tenant's rows.
alter table weld_public.heat_treatment_rules add column if not exists edition text not null default 'B31.3-2022'
  check (edition in ('B31.3-2022', 'B31.3-2012'));
alter table weld_public.heat_treatment_rules alter column edition drop default;
alter table weld_public.heat_treatment_rules drop constraint if exists heat_treatment_rules_pkey;
alter table weld_public.heat_treatment_rules add primary key (tenant_id, edition, p_number);
comment on constraint heat_treatment_rules_pkey on weld_public.heat_treatment_rules is
  '@behavior -single -update -delete';
comment on column weld_public.heat_treatment_rules.edition is
  'The edition of B31.3 the row is of (tenant_settings.code_edition chooses).';
comment on column weld_public.heat_treatment_rules.hardness_max_hb is
  'The edition''s Brinell limit for the P-number, which asks a hardness test of its heat treated welds (B31.3 331.1.7); null: the table asks none (the 2022 edition asks none).';
-- The rows seeded before editions were the 2016 and later table with the older edition's hardness
-- column: they are the 2022 edition's, without that column (a limit a DBA set stays).
update weld_public.heat_treatment_rules
   set hardness_max_hb = null
 where (p_number, hardness_max_hb) in (('3', 225), ('4', 225), ('5A', 241), ('5B', 241), ('6', 241))
   and clause = 'B31.3 Table 331.1.1';

create table if not exists weld_public.preheat_rules (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  edition       text not null check (edition in ('B31.3-2022', 'B31.3-2012')),
  p_number      text not null check (p_number ~ '^[0-9]{1,3}[A-Z]?$'),
  wall_from_in  numeric(6, 3) not null default 0 check (wall_from_in >= 0 and wall_from_in <> 'NaN'),
  minimum_f     integer not null check (minimum_f between 0 and 1500),
  required      boolean not null,
  clause        text not null check (char_length(clause) between 1 and 50),
  note          text check (char_length(note) <= 500),
  primary key (tenant_id, edition, p_number, wall_from_in)
);
comment on table weld_public.preheat_rules is
  'B31.3 Table 330.1.1 per edition: the minimum preheat of a P-number from a nominal wall thickness on (the row with the greatest wall_from_in not above the weld''s wall applies).';
comment on column weld_public.preheat_rules.wall_from_in is 'The nominal wall, in inches, from which the row applies (0: every wall).';
comment on column weld_public.preheat_rules.minimum_f is 'The minimum preheat temperature, in degrees Fahrenheit.';
comment on column weld_public.preheat_rules.required is 'true: the edition requires it (judged: PREHEAT_LOW); false: it only recommends it (shown, not judged).';

create table if not exists weld_public.heat_treatment_exemptions (
  tenant_id        uuid not null default weld_hidden.current_tenant_id()
                   references weld_public.tenants on delete cascade,
  edition          text not null check (edition in ('B31.3-2022', 'B31.3-2012')),
  p_number         text not null check (p_number ~ '^[0-9]{1,3}[A-Z]?$'),
  weld_kind        text not null check (weld_kind in ('any', 'groove', 'fillet')),
  wall_max_in      numeric(6, 3) check (wall_max_in > 0 and wall_max_in <> 'NaN'),
  size_max         numeric(6, 3) check (size_max > 0 and size_max <> 'NaN'),
  throat_max_in    numeric(6, 3) check (throat_max_in > 0 and throat_max_in <> 'NaN'),
  preheat_min_f    integer check (preheat_min_f between 0 and 1500),
  preheat_over_in  numeric(6, 3) check (preheat_over_in >= 0 and preheat_over_in <> 'NaN'),
  table_preheat    boolean not null default false,
  conditions       text check (char_length(conditions) <= 500),
  clause           text not null check (char_length(clause) between 1 and 50),
  note             text check (char_length(note) <= 500),
  primary key (tenant_id, edition, p_number, weld_kind)
);
comment on table weld_public.heat_treatment_exemptions is
  'The exemptions from PWHT an edition allows (B31.3-2022 Table 331.1.3): a weld of the P-number and kind within the limits, with the preheat recorded, welded to a WPS qualified as-welded (pwht_required false), needs no PWHT for that P-number.';
comment on column weld_public.heat_treatment_exemptions.weld_kind is 'any, groove (butt, miter, tie-in, branch, lap) or fillet (socket and fillet).';
comment on column weld_public.heat_treatment_exemptions.wall_max_in is 'The greatest nominal wall it applies to, in inches; null: every wall.';
comment on column weld_public.heat_treatment_exemptions.size_max is 'The greatest NPS it applies to; null: every size.';
comment on column weld_public.heat_treatment_exemptions.throat_max_in is 'The greatest throat of a fillet or socket weld it applies to, in inches; null: no limit.';
comment on column weld_public.heat_treatment_exemptions.preheat_min_f is 'The preheat, in degrees Fahrenheit, that must have been applied (above preheat_over_in); null: none.';
comment on column weld_public.heat_treatment_exemptions.preheat_over_in is 'The wall, in inches, above which preheat_min_f applies; null: every wall.';
comment on column weld_public.heat_treatment_exemptions.table_preheat is 'The required preheat of Table 330.1.1 must have been applied.';
comment on column weld_public.heat_treatment_exemptions.conditions is 'What else the exemption asks that the service does not judge (carbon content, multiple layers): the WPS qualified as-welded is taken to meet it.';

select weld_private.secure_tenant_table(t)
  from unnest(array['weld_public.weld_repairs', 'weld_public.preheat_rules',
                    'weld_public.heat_treatment_exemptions']::regclass[]) as t
 where not exists (select from pg_catalog.pg_policy p where p.polrelid = t and p.polname = 'tenant_isolation');
do $$
declare
  data_read constant text := '{welds:read,welds:write,ndt:write,packages:write,imports:write}';
  area record;
begin
  for area in
    select t.tbl, t.read_scopes, t.write_scopes
      from (values
        ('weld_public.weld_repairs', data_read, '{welds:write}'),
        ('weld_public.preheat_rules', data_read, null),
        ('weld_public.heat_treatment_exemptions', data_read, null)
      ) as t (tbl, read_scopes, write_scopes)
  loop
    execute format('drop policy if exists scope_read on %1$s; drop policy if exists scope_insert on %1$s;
                    drop policy if exists scope_update on %1$s; drop policy if exists scope_delete on %1$s',
                   area.tbl);
    execute format(
      'create policy scope_read on %s as restrictive for select to weld_viewer
         using (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.read_scopes);
    -- (The rule tables are people's to change, as every rule table: no OAuth2 client writes them.)
    execute format(
      'create policy scope_insert on %s as restrictive for insert to weld_viewer
         with check (tenant_id = (select %s))', area.tbl,
      case when area.write_scopes is null then 'weld_hidden.unscoped_tenant_id()'
           else format('weld_hidden.scoped_tenant_id(%L)', area.write_scopes) end);
    execute format(
      'create policy scope_update on %s as restrictive for update to weld_viewer
         using (tenant_id = (select %s))', area.tbl,
      case when area.write_scopes is null then 'weld_hidden.unscoped_tenant_id()'
           else format('weld_hidden.scoped_tenant_id(%L)', area.write_scopes) end);
    execute format(
      'create policy scope_delete on %s as restrictive for delete to weld_viewer
         using (tenant_id = (select %s))', area.tbl,
      case when area.write_scopes is null then 'weld_hidden.unscoped_tenant_id()'
           else format('weld_hidden.scoped_tenant_id(%L)', area.write_scopes) end);
  end loop;
end
$$;

grant select on weld_public.weld_repairs, weld_public.preheat_rules,
                weld_public.heat_treatment_exemptions
   to weld_viewer, weld_reporting, weld_rules;
-- Inspectors record a repair's welding as they record the weld's re-weld; the lifecycle
-- (weld_public.change_weld_status, as weld_rules) opens each repair cycle.
grant update (welded_on, welder_id, wps_id, preheat_f) on weld_public.weld_repairs to weld_inspector;
grant insert (tenant_id, weld_id, repair_cycle, released_by),
      update (rewelded_at, welded_on, welder_id, wps_id, preheat_f)
   on weld_public.weld_repairs to weld_rules;

------------------------------------------------------------------------------------------------
-- 8. The repair rate counts random examinations of original work by the month examined, and
--    the defects' length: the facts and the welder-months gain what they need.
alter table weld_private.weld_report_facts add column if not exists examined_month date;
alter table weld_private.weld_report_facts add column if not exists defect_length_in numeric(10, 3);
alter table weld_private.weld_report_facts drop column if exists examined;
alter table weld_private.welder_month_counts add column if not exists defect_length_in numeric not null default 0;
alter table weld_private.welder_month_counts add column if not exists defect_length_unknown integer not null default 0;
alter table weld_private.welder_month_counts drop column if exists length_rejected_in;

------------------------------------------------------------------------------------------------
-- 9. The functions: what changed signature or shape goes first, then every file.
grant update (shortfall) on weld_public.examination_selections to weld_rules;
grant insert (defect_length_in, acceptance_held), update (defect_length_in, acceptance_held)
   on weld_public.ndt_record_welds to weld_rules;
grant insert (defect_length_in), update (defect_length_in) on weld_public.film_intervals to weld_rules;
drop function if exists weld_public.change_weld_status(uuid, weld_public.weld_status, text, integer, uuid);
-- (Refusing an acceptance while an examination is owed is the lifecycle's own now, in every mode.)
drop trigger if exists _200_reexamined on weld_public.weld_status_history;
drop function if exists weld_private.tg_weld_status_history__reexamined();
drop view if exists weld_reports.welder_performance;
drop function if exists weld_hidden.report_welder_performance();

--! Included functions/weld_hidden.touch.sql
-- updated_at on every update; for tables with a version, the version too (optimistic locking).
create or replace function weld_hidden.touch() returns trigger
  language plpgsql
as $$
begin
  new.updated_at := now();
  if tg_nargs > 0 and tg_argv[0] = 'versioned' then
    new.version := old.version + 1;
  end if;
  return new;
end
$$;

create or replace trigger _100_touch before update on weld_public.inspections
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.isos
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.ndt_records
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.pqrs
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.tenant_settings
  for each row execute function weld_hidden.touch();
create or replace trigger _100_touch before update on weld_public.test_packages
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.welder_qualifications
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.welders
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.wps
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger film_intervals_touch before update on weld_public.film_intervals for each row execute function weld_hidden.touch();
create or replace trigger users_touch before update on weld_public.users for each row execute function weld_hidden.touch();
create or replace trigger welds_touch before update on weld_public.welds
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.pwht_records
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.hardness_readings
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.components
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.filler_lots
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.weld_fillers
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.attachments
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.punch_items
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.weld_repairs
  for each row execute function weld_hidden.touch('versioned');
--! EndIncluded functions/weld_hidden.touch.sql
--! Included functions/weld_private.weld_json.sql
create or replace function weld_private.weld_json(w weld_public.welds) returns jsonb
  language sql stable parallel safe
as $$
  select jsonb_build_object(
    'id', w.id, 'isoId', w.iso_id, 'weldNumber', w.weld_number, 'type', w.type, 'size', w.size,
    'schedule', w.schedule, 'wallThickness', w.wall_thickness, 'material', w.material,
    'welderId', w.welder_id, 'wpsId', w.wps_id, 'weldedOn', w.welded_on,
    'baseMetal1PNumber', w.base_metal_1_p_number, 'baseMetal2PNumber', w.base_metal_2_p_number,
    'preheatF', w.preheat_f, 'throatIn', w.throat_in, 'component1Id', w.component_1_id, 'component2Id', w.component_2_id,
    'mapPage', w.map_page, 'mapX', w.map_x, 'mapY', w.map_y, 'status', w.status,
    'repairCycle', w.repair_cycle, 'acceptanceNdtRecordId', w.acceptance_ndt_record_id,
    'acceptanceInspectionId', w.acceptance_inspection_id,
    'acceptanceDisposition', w.acceptance_disposition, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

grant execute on function weld_private.weld_json(weld_public.welds) to weld_rules;
--! EndIncluded functions/weld_private.weld_json.sql
--! Included functions/weld_private.weld_kind.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The kind of a weld as B31.3 341.4.1 groups examinations, which progressive examination keeps
-- to (341.3.4(a): "two additional samples of the same kind"): groove (circumferential butt,
-- miter and tie-in welds, branch and fabricated lap welds), socket, or fillet.
create or replace function weld_private.weld_kind(weld_type text) returns text
  language sql immutable parallel safe
as $$
  select case weld_type when 'SW' then 'socket' when 'FW' then 'fillet' else 'groove' end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.weld_kind.sql
--! Included functions/weld_private.wps_joints.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The joints a WPS covers (QW-403.11, QW-424.1), each sorted as weld_private.p_joint sorts it:
-- the one its P-numbers name ({1}: 1 to 1; {1,8}: 1 to 8), then its additional joints ('4-3': 4
-- to 3), in that order, each once; empty when it records no P-numbers. A joint is written 'a-b'
-- here (an array of arrays would be one flat array in PostgreSQL): string_to_array(joint, '-')
-- is the pair weld_private.p_joint_words says.
create or replace function weld_private.wps_joints(p_numbers text[], additional_joints text[])
  returns text[]
  language sql immutable parallel safe
as $$
  select coalesce(array_agg(j.joint order by j.n), '{}')
    from (select distinct on (x.joint) x.joint, x.n
            from (select array_to_string(weld_private.p_joint(p_numbers[1], p_numbers[2]), '-') as joint, 0 as n
                  union all
                  select array_to_string(weld_private.p_joint(split_part(a.joint, '-', 1), split_part(a.joint, '-', 2)), '-'),
                         a.n
                    from unnest(additional_joints) with ordinality as a (joint, n)) x
           where x.joint is not null
           order by x.joint, x.n) j
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.wps_joints.sql
--! Included functions/weld_private.weldings_of.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The welding each of `welds` has had: the weld itself (repair_cycle 0) and each repair cycle
-- re-welded since (weld_public.weld_repairs, REPAIR -> PENDING), with the day, welder, WPS (a
-- repair's own, else the weld's) and preheat of each. `day_known` is false where a repair's day is
-- not recorded: its day is then the day it left REPAIR (UTC), the latest it can have been. One
-- home for what the checks, heat treatment, preheat and continuity judge of a weld's welding.
create or replace function weld_private.weldings_of(welds weld_public.welds[])
  returns table (
    weld_id uuid, repair_cycle integer, welded_on date, day_known boolean, welder_id uuid,
    wps_id uuid, preheat_f integer
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select w.id, 0, w.welded_on, w.welded_on is not null, w.welder_id, w.wps_id, w.preheat_f
    from unnest(welds) w
   where w.tenant_id = weld_hidden.current_tenant_id()
  union all
  select w.id, p.repair_cycle, coalesce(p.welded_on, (p.rewelded_at at time zone 'UTC')::date),
         p.welded_on is not null, p.welder_id, coalesce(p.wps_id, w.wps_id), p.preheat_f
    from unnest(welds) w
    join weld_public.weld_repairs p on p.tenant_id = w.tenant_id and p.weld_id = w.id
   where w.tenant_id = weld_hidden.current_tenant_id() and p.rewelded_at is not null
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.weldings_of.sql
--! Included functions/weld_private.json_defect_length.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The length of the defects an examination found (input->'defectLengthIn', inches): 0.001 to
-- 999.999, and only with a rejected result (`verdict`: an RT weld whose result is left to its
-- film carries its lengths on the film's rejected intervals). Null when not given.
create or replace function weld_private.json_defect_length(input jsonb, pointer text, verdict text)
  returns numeric
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  value jsonb := input -> 'defectLengthIn';
begin
  if value is null or jsonb_typeof(value) = 'null' then
    return null;
  end if;
  -- Held to a thousandth: what rounds to 0 is no length.
  if jsonb_typeof(value) <> 'number' or round(value::numeric, 3) <= 0 or value::numeric > 999.999 then
    perform weld_private.invalid_input('defectLengthIn must be a length in inches from 0.001 to 999.999',
                                       pointer || '/defectLengthIn');
  end if;
  if verdict is distinct from 'rejected' then
    perform weld_private.invalid_input('defectLengthIn is the length of rejected defects: give it with a rejected result (for results from the film, on its rejected intervals)',
                                       pointer || '/defectLengthIn');
  end if;
  return round(value::numeric, 3);
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_defect_length.sql
--! Included functions/weld_private.seed_code_rules.sql
-- The codes' values, seeded for every tenant (and again: nothing a DBA changed is overwritten).
create or replace function weld_private.seed_code_rules(for_tenant uuid) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  insert into weld_public.examination_rules
    (tenant_id, fluid_service, method, weld_type, percent, closed_by, clause, note)
  select for_tenant, r.fluid_service, r.method, t.weld_type, r.percent, r.closed_by, r.clause, r.note
    from (values
      ('normal', 'RT', '{BW,MW,TW}'::text[], 5, '{}'::text[], 'B31.3 341.4.1(b)(1)',
       'random RT (or UT) of at least 5% of the circumferential butt and miter groove welds of each lot'),
      ('normal', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 5, '{}', 'B31.3 341.4.1(a)',
       'visual examination of at least 5% of the fabrication, each welder''s work represented'),
      ('category_d', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 100, '{}', 'B31.3 341.4.2',
       'Category D: visual examination only'),
      ('category_m', 'RT', '{BW,MW,TW,LW,BR}', 20, '{}', 'B31.3 M341.4(b)',
       'Category M: at least 20% of the butt, miter, fabricated lap and branch welds by full RT'),
      ('category_m', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 100, '{}', 'B31.3 M341.4(a)',
       'Category M: 100% visual examination'),
      ('severe_cyclic', 'RT', '{BW,MW,TW}', 100, '{}', 'B31.3 341.4.3(b)',
       'severe cyclic: 100% RT (or UT) of butt and miter welds'),
      ('severe_cyclic', 'RT', '{BR}', 100, '{MT,PT}', 'B31.3 341.4.3(b), (c)',
       'severe cyclic: 100% RT (or UT) of fabricated branch connection welds; a branch weld not radiographed gets MT or PT'),
      ('severe_cyclic', 'MT', '{SW}', 100, '{PT}', 'B31.3 341.4.3(c)',
       'severe cyclic: MT or PT of every socket weld'),
      ('severe_cyclic', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 100, '{}', 'B31.3 341.4.3(a)',
       'severe cyclic: 100% visual examination'),
      ('high_pressure', 'RT', '{BW,MW,TW,BR}', 100, '{}', 'B31.3 K341.4.1(b)',
       'high pressure: 100% RT (or UT) of butt, miter and branch welds'),
      ('high_pressure', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 100, '{}', 'B31.3 K341.4.1(a)',
       'high pressure: 100% visual examination')
    ) as r (fluid_service, method, weld_types, percent, closed_by, clause, note)
    cross join lateral unnest(r.weld_types) as t (weld_type)
  on conflict do nothing;

  insert into weld_public.qualification_range_rules
    (tenant_id, dimension, coupon, three_layers, min_in, max_factor, clause, note)
  values
    (for_tenant, 'diameter', '[0,1)', false, null, null, 'ASME IX QW-452.3',
     'a coupon under 1 in. OD qualifies the size welded and up'),
    (for_tenant, 'diameter', '[1,2.875]', false, 1, null, 'ASME IX QW-452.3',
     '1 in. to 2 7/8 in. OD inclusive qualifies 1 in. and up'),
    (for_tenant, 'diameter', '(2.875,)', false, 2.875, null, 'ASME IX QW-452.3',
     'over 2 7/8 in. OD qualifies 2 7/8 in. and up'),
    (for_tenant, 'thickness', '[0,)', false, null, 2, 'ASME IX QW-452.1(b)',
     'weld metal t qualifies up to 2t'),
    (for_tenant, 'thickness', '[0.5,)', true, null, null, 'ASME IX QW-452.1(b)',
     't of 1/2 in. or more, in at least three layers, qualifies any thickness')
  on conflict do nothing;

  insert into weld_public.procedure_thickness_rules
    (tenant_id, coupon, min_in, min_factor, max_in, max_factor, clause, note)
  values
    (for_tenant, '[0,0.0625)', null, 1, null, 2, 'ASME IX QW-451.1', 'T under 1/16 in.: T to 2T'),
    (for_tenant, '[0.0625,0.375]', 0.0625, null, null, 2, 'ASME IX QW-451.1', '1/16 to 3/8 in.: 1/16 in. to 2T'),
    (for_tenant, '(0.375,1.5)', 0.1875, null, null, 2, 'ASME IX QW-451.1', 'over 3/8 in.: 3/16 in. to 2T'),
    (for_tenant, '[1.5,)', 0.1875, null, 8, null, 'ASME IX QW-451.1', '1 1/2 in. and over: 3/16 in. to 8 in.')
  on conflict do nothing;

  insert into weld_public.p_number_rules (tenant_id, tested, covers, clause, note)
  select for_tenant, r.tested, r.covers, 'ASME IX QW-424.1', r.note
    from (values
      ('{3,3}'::text[], '{1,3}'::text[], 'P-No. 3 to 3 also qualifies P-No. 3 to 1'),
      ('{4,4}', '{3,4}', 'P-No. 4 to 4 also qualifies P-No. 4 to 3 and 1'),
      ('{4,4}', '{1,4}', 'P-No. 4 to 4 also qualifies P-No. 4 to 3 and 1'),
      ('{3,4}', '{1,4}', 'P-No. 4 to 3 or 1 qualifies P-No. 4 to 3 and 1'),
      ('{1,4}', '{3,4}', 'P-No. 4 to 3 or 1 qualifies P-No. 4 to 3 and 1'),
      ('{5A,5A}', '{4,5A}', 'P-No. 5A to 5A also qualifies P-No. 5A to 4, 3 and 1'),
      ('{5A,5A}', '{3,5A}', 'P-No. 5A to 5A also qualifies P-No. 5A to 4, 3 and 1'),
      ('{5A,5A}', '{1,5A}', 'P-No. 5A to 5A also qualifies P-No. 5A to 4, 3 and 1'),
      ('{4,5A}', '{3,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{4,5A}', '{1,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{3,5A}', '{4,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{3,5A}', '{1,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{1,5A}', '{4,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{1,5A}', '{3,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{15E,15E}', '{15E,5B}', 'P-No. 15E to 15E also qualifies P-No. 15E or 5B to 15E or 5B'),
      ('{15E,15E}', '{5B,5B}', 'P-No. 15E to 15E also qualifies P-No. 15E or 5B to 15E or 5B')
    ) as r (tested, covers, note)
  on conflict do nothing;

  -- B31.3 Table 331.1.1 by edition, US customary units: the nominal wall over which PWHT is
  -- required (0: every wall), the holding temperature range, time at temperature, and the Brinell
  -- limit that asks a hardness test (B31.3 331.1.7). B31.3-2022: the table as revised (1 h/in.,
  -- 1 h minimum, up to 2 in.; 2 h plus 15 min for each further inch), which has no hardness
  -- column. B31.3-2012: the table before the revision (1 h/in. with its minimum, no break at 2 in.)
  -- and its hardness column. P-No. 15E (9Cr-1Mo-V) was P-No. 5B Group 2 in the older table.
  insert into weld_public.heat_treatment_rules
    (tenant_id, edition, p_number, wall_over_in, temperature_min_f, temperature_max_f,
     hold_minutes_per_in, hold_minutes_min, hold_break_in, hold_minutes_beyond, hardness_max_hb,
     clause, note)
  select for_tenant, r.edition, r.p_number, r.wall_over_in, r.t_min, r.t_max, r.per_in, r.min,
         r.break_in, r.beyond, r.hb, 'B31.3 Table 331.1.1', r.note
    from (values
      ('B31.3-2022', '1', 0.75, 1100, 1200, 60, 60, 2, 15, null::integer, 'carbon steel: PWHT over 3/4 in. nominal wall'),
      ('B31.3-2022', '3', 0.75, 1100, 1325, 60, 60, 2, 15, null, 'alloy steels, Cr 3/4% max.: PWHT over 3/4 in.'),
      ('B31.3-2022', '4', 0.5, 1200, 1375, 60, 60, 2, 15, null, '1 1/4 Cr - 1/2 Mo and similar: PWHT over 1/2 in.'),
      ('B31.3-2022', '5A', 0.5, 1250, 1400, 60, 60, 2, 15, null, '2 1/4 Cr - 1 Mo and similar: PWHT over 1/2 in.'),
      ('B31.3-2022', '5B', 0, 1250, 1400, 60, 60, 2, 15, null, '5 Cr to 9 Cr: PWHT at every thickness'),
      ('B31.3-2022', '6', 0, 1400, 1475, 60, 60, 2, 15, null, 'martensitic stainless steels: PWHT at every thickness'),
      ('B31.3-2022', '9A', 0.75, 1100, 1200, 60, 60, 2, 15, null, 'nickel alloy steels (2 1/2 Ni): PWHT over 3/4 in.'),
      ('B31.3-2022', '9B', 0.625, 1100, 1175, 60, 60, 2, 15, null, 'nickel alloy steels (3 1/2 Ni): PWHT over 5/8 in.'),
      ('B31.3-2022', '15E', 0, 1300, 1425, 60, 60, 2, 15, null, '9 Cr - 1 Mo - V: PWHT at every thickness'),
      ('B31.3-2012', '1', 0.75, 1100, 1200, 60, 60, 999, 60, null, 'carbon steel: PWHT over 3/4 in. nominal wall'),
      ('B31.3-2012', '3', 0.75, 1100, 1325, 60, 60, 999, 60, 225, 'alloy steels, Cr 1/2% max.: PWHT over 3/4 in.; 225 HB'),
      ('B31.3-2012', '4', 0.5, 1300, 1375, 60, 120, 999, 60, 225, 'alloy steels, 1/2% < Cr <= 2%: PWHT over 1/2 in., 2 h minimum; 225 HB'),
      ('B31.3-2012', '5A', 0.5, 1300, 1400, 60, 120, 999, 60, 241, 'alloy steels, 2 1/4% <= Cr <= 3%: PWHT over 1/2 in., 2 h minimum; 241 HB'),
      ('B31.3-2012', '5B', 0, 1300, 1400, 60, 120, 999, 60, 241, 'alloy steels, 3% < Cr <= 10%: PWHT at every thickness, 2 h minimum; 241 HB'),
      ('B31.3-2012', '6', 0, 1350, 1450, 60, 120, 999, 60, 241, 'martensitic stainless steels: PWHT at every thickness, 2 h minimum; 241 HB'),
      ('B31.3-2012', '9A', 0.75, 1100, 1175, 30, 60, 999, 30, null, 'nickel alloy steels: PWHT over 3/4 in., 1/2 h per inch'),
      ('B31.3-2012', '9B', 0.75, 1100, 1175, 30, 60, 999, 30, null, 'nickel alloy steels: PWHT over 3/4 in., 1/2 h per inch'),
      ('B31.3-2012', '15E', 0, 1300, 1400, 60, 120, 999, 60, 241, '9 Cr - 1 Mo - V (then P-No. 5B Group 2): PWHT at every thickness; 241 HB')
    ) as r (edition, p_number, wall_over_in, t_min, t_max, per_in, min, break_in, beyond, hb, note)
  on conflict do nothing;

  -- B31.3 Table 330.1.1: the minimum preheat by P-number and nominal wall. B31.3-2022 requires
  -- each; B31.3-2012 requires P-No. 4, 5A, 5B, 10I and 15E's and recommends the others (shown by
  -- the table, not judged). The strength rows (SMTS over 71 ksi: 175 F at every wall for P-No. 1
  -- and 3) are not seeded: the service records no tensile strength.
  insert into weld_public.preheat_rules
    (tenant_id, edition, p_number, wall_from_in, minimum_f, required, clause, note)
  select for_tenant, e.edition, r.p_number, r.wall_from_in, r.minimum_f,
         e.edition = 'B31.3-2022' or r.required_2012, 'B31.3 Table 330.1.1', r.note
    from (values ('B31.3-2022'), ('B31.3-2012')) as e (edition)
    cross join (values
      ('1', 0, 50, false, 'carbon steel, walls under 1 in.'),
      ('1', 1, 175, false, 'carbon steel, walls of 1 in. and more'),
      ('3', 0, 50, false, 'alloy steels, Cr 1/2% max., walls under 1/2 in.'),
      ('3', 0.5, 175, false, 'alloy steels, Cr 1/2% max., walls of 1/2 in. and more'),
      ('4', 0, 300, true, 'alloy steels, 1/2% < Cr <= 2%'),
      ('5A', 0, 350, true, 'alloy steels, 2 1/4% <= Cr <= 10%'),
      ('5B', 0, 350, true, 'alloy steels, 2 1/4% <= Cr <= 10%'),
      ('6', 0, 300, false, 'martensitic stainless steels'),
      ('7', 0, 50, false, 'ferritic stainless steels'),
      ('8', 0, 50, false, 'austenitic stainless steels'),
      ('9A', 0, 200, false, 'nickel alloy steels'),
      ('9B', 0, 200, false, 'nickel alloy steels'),
      ('10I', 0, 300, true, '27Cr steel'),
      ('15E', 0, 400, true, '9 Cr - 1 Mo - V')
    ) as r (p_number, wall_from_in, minimum_f, required_2012, note)
  on conflict do nothing;

  -- The exemptions from PWHT. B31.3-2022 Table 331.1.3, for a WPS qualified as-welded: P-No. 1
  -- at every wall and kind, with 200 F preheat over 1 in.; P-No. 3 up to 5/8 in., with 200 F
  -- preheat over 1/2 in.; P-No. 4 up to 5/8 in. with the table's preheat (groove welds; socket
  -- and fillet welds of a throat up to 1/2 in.). B31.3-2012 331.1.3(b): fillet welds of socket
  -- and slip-on connections NPS 2 and smaller, P-No. 1 of a throat up to 5/8 in.; P-No. 3, 4, 5A
  -- and 5B up to 1/4 in. with the table's preheat. What the service cannot judge is in
  -- `conditions`.
  insert into weld_public.heat_treatment_exemptions
    (tenant_id, edition, p_number, weld_kind, wall_max_in, size_max, throat_max_in, preheat_min_f,
     preheat_over_in, table_preheat, conditions, clause, note)
  select for_tenant, r.edition, r.p_number, r.weld_kind, r.wall_max_in, r.size_max, r.throat_max_in,
         r.preheat_min_f, r.preheat_over_in, r.table_preheat, r.conditions, r.clause, r.note
    from (values
      ('B31.3-2022', '1', 'any', null::numeric, null::numeric, null::numeric, 200, 1::numeric, false,
       'multiple layer welds where the nominal material thickness is over 3/16 in.',
       'B31.3 Table 331.1.3', 'P-No. 1: no PWHT with 200 F preheat over 1 in.'),
      ('B31.3-2022', '3', 'any', 0.625, null, null, 200, 0.5, false,
       'Group No. 1 or 2; specified carbon content at most 0.25%; multiple layer welds over 3/16 in.',
       'B31.3 Table 331.1.3', 'P-No. 3 up to 5/8 in.: no PWHT with 200 F preheat over 1/2 in.'),
      ('B31.3-2022', '4', 'groove', 0.625, null, null, null, null, true,
       'Group No. 1; specified carbon content at most 0.15%; multiple layer welds over 3/16 in.',
       'B31.3 Table 331.1.3', 'P-No. 4 groove welds up to 5/8 in. with the required preheat'),
      ('B31.3-2022', '4', 'fillet', 0.625, null, 0.5, null, null, true,
       'Group No. 1; carbon content of the pipe at most 0.15%; multiple layer welds over 3/16 in.',
       'B31.3 Table 331.1.3', 'P-No. 4 socket and fillet welds of a throat up to 1/2 in. on pipe up to 5/8 in., with the required preheat'),
      ('B31.3-2012', '1', 'fillet', null, 2, 0.625, null, null, false,
       'fillet welds at slip-on and socket welding flanges and piping connections',
       'B31.3 331.1.3(b)', 'P-No. 1 fillet welds of NPS 2 and smaller, throat up to 5/8 in.'),
      ('B31.3-2012', '3', 'fillet', null, 2, 0.25, null, null, true,
       'specified minimum tensile strength under 71 ksi',
       'B31.3 331.1.3(b)', 'P-No. 3 fillet welds of NPS 2 and smaller, throat up to 1/4 in., with the preheat'),
      ('B31.3-2012', '4', 'fillet', null, 2, 0.25, null, null, true,
       'specified minimum tensile strength under 71 ksi',
       'B31.3 331.1.3(b)', 'P-No. 4 fillet welds of NPS 2 and smaller, throat up to 1/4 in., with the preheat'),
      ('B31.3-2012', '5A', 'fillet', null, 2, 0.25, null, null, true,
       'specified minimum tensile strength under 71 ksi',
       'B31.3 331.1.3(b)', 'P-No. 5A fillet welds of NPS 2 and smaller, throat up to 1/4 in., with the preheat'),
      ('B31.3-2012', '5B', 'fillet', null, 2, 0.25, null, null, true,
       'specified minimum tensile strength under 71 ksi',
       'B31.3 331.1.3(b)', 'P-No. 5B fillet welds of NPS 2 and smaller, throat up to 1/4 in., with the preheat')
    ) as r (edition, p_number, weld_kind, wall_max_in, size_max, throat_max_in, preheat_min_f,
            preheat_over_in, table_preheat, conditions, clause, note)
  on conflict do nothing;
$$;
--! EndIncluded functions/weld_private.seed_code_rules.sql
--! Included functions/weld_private.reexaminations_of.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Each re-examination of the given welds with the examination that meets it (null: open). The
-- record must be of the method or its volumetric equal, recorded after the weld was released for
-- the repair (never the record that rejected it), and dated on or after the day the repair was
-- welded (its weld_repairs.welded_on; the day it left REPAIR while that is not recorded).
create or replace function weld_private.reexaminations_of(weld_ids uuid[])
  returns table (
    id uuid, weld_id uuid, method text, methods text[], repair_cycle integer, rewelded_on date,
    cause text, met_by text, met_on date
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select r.id, r.weld_id, r.method, m.methods, r.repair_cycle, m.rewelded_on, r.cause,
         e.record, e.examined_on
    from weld_public.weld_reexaminations r
    left join weld_public.weld_repairs p
      on p.tenant_id = r.tenant_id and p.weld_id = r.weld_id and p.repair_cycle = r.repair_cycle
    cross join lateral (
      select weld_private.closing_methods(r.tenant_id, r.method, null, null) as methods,
             coalesce(p.welded_on, r.rewelded_on) as rewelded_on) m
    left join lateral (
      select x.record, x.examined_on
        from weld_private.weld_examinations x
       where x.tenant_id = r.tenant_id and x.weld_id = r.weld_id and x.method = any(m.methods)
         and x.examined_on >= m.rewelded_on
         and (p.released_at is null or x.created_at > p.released_at)
       order by x.examined_on, x.created_at
       limit 1) e on true
   where r.tenant_id = weld_hidden.current_tenant_id() and r.weld_id = any(weld_ids)
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.reexaminations_of.sql
--! Included functions/weld_private.acceptance_held.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Why a weld may not be ACCEPTED yet, as a weld check (code, detail); no row when it may. A
-- weld's status tells the truth: it is not ACCEPTED while an examination of it is owed, that is
--   - a repair's re-examination by the methods that rejected it (B31.3 341.3.3), not yet met by
--     a record dated on or after the repair was welded, or
--   - a selection of it (drawn at random, counted, or a progressive tier) that no examination of
--     its method has met yet (B31.3 341.4.1, 341.3.4).
-- The first reason found is given: re-examinations first, then selections by method.
create or replace function weld_private.acceptance_held(weld_id uuid)
  returns table (code text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select x.code, x.detail
    from ((select 'REEXAMINATION_OPEN' as code,
                  format('repair %s, welded on %s, owes a new %s examination (%s) dated on or after that day (B31.3 341.3.3)',
                         r.repair_cycle, r.rewelded_on, r.method, weld_private.methods_words(r.methods)) as detail
             from weld_private.reexaminations_of(array[acceptance_held.weld_id]) r
            where r.met_by is null
            order by r.repair_cycle, r.method
            limit 1)
          union all
          (select 'EXAMINATION_OPEN',
                  format('it is selected for %s (%s) and no examination that meets it covers it yet (B31.3 341.4.1)',
                         s.method, case when s.tier in ('random', 'examined') then s.tier
                                        else 'progressive tier ' || s.tier end)
             from weld_public.examination_selections s
            where s.tenant_id = weld_hidden.current_tenant_id() and s.weld_id = acceptance_held.weld_id
              and not exists (select from weld_private.selection_examination(s))
            order by s.method
            limit 1)) x
   order by x.code desc -- a re-examination first (REEXAMINATION_OPEN > EXAMINATION_OPEN)
   limit 1
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.acceptance_held.sql
--! Included functions/weld_public.welds_acceptance.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- How an accepted weld was accepted, in words (the register's acceptance column, the turnover
-- dossier, GraphQL's Weld.acceptance): "RT report RT-7 of 2026-03-02", "the visual inspection of
-- 2026-03-01", "disposition: NCR-12 use as is", or "not recorded" (an acceptance made before
-- every acceptance named its basis). Null for a weld that is not ACCEPTED. SECURITY INVOKER: it
-- reads the records with the reader's rights.
create or replace function weld_public.welds_acceptance(weld weld_public.welds) returns text
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case
           when weld.status <> 'ACCEPTED' then null
           when weld.acceptance_ndt_record_id is not null
             then (select r.method || ' report ' || r.report_number || ' of ' || r.examined_on
                     from weld_public.ndt_records r
                    where r.tenant_id = weld.tenant_id and r.id = weld.acceptance_ndt_record_id)
           when weld.acceptance_inspection_id is not null
             then (select 'the ' || i.kind || ' inspection of ' || i.inspected_on
                     from weld_public.inspections i
                    where i.tenant_id = weld.tenant_id and i.id = weld.acceptance_inspection_id)
           when weld.acceptance_disposition is not null then 'disposition: ' || weld.acceptance_disposition
           else 'not recorded'
         end
$$;

comment on function weld_public.welds_acceptance(weld_public.welds) is
  'How the weld was accepted, in words: the NDT record or inspection it rests on, the engineer''s disposition, or "not recorded" for an acceptance made before acceptances named their basis; null while it is not ACCEPTED.';

grant execute on function weld_public.welds_acceptance(weld_public.welds) to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.welds_acceptance.sql
--! Included functions/weld_private.record_repair_welding.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A repaired weld re-welded (REPAIR -> PENDING, weld_public.change_weld_status): its repair
-- cycle's row is marked re-welded now, with the welding `repair` gives, {"weldedOn", "welderId",
-- "wpsId", "preheatF"} (each optional: what is left out stays as recorded, and may be recorded
-- later on the repair itself). Invalid input is WD007 with a pointer under /repair, including the
-- repair's own rules (weld_private.tg_weld_repairs__welding).
create or replace function weld_private.record_repair_welding(weld weld_public.welds, repair jsonb)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  day date;
  welder uuid;
  wps uuid;
  preheat integer;
  problem_pointer text;
  problem_message text;
begin
  perform weld_private.check_object(repair, '/repair', 'repair', '{weldedOn,welderId,wpsId,preheatF}', '{}');
  day := weld_private.json_date(repair, 'weldedOn', '/repair');
  if jsonb_typeof(repair -> 'welderId') is distinct from 'null' and repair ? 'welderId' then
    welder := weld_private.json_uuid(repair -> 'welderId', '/repair/welderId', 'welderId');
    if not exists (select from weld_public.welders w where w.tenant_id = weld.tenant_id and w.id = welder) then
      perform weld_private.invalid_input(format('there is no welder %s', welder), '/repair/welderId');
    end if;
  end if;
  if jsonb_typeof(repair -> 'wpsId') is distinct from 'null' and repair ? 'wpsId' then
    wps := weld_private.json_uuid(repair -> 'wpsId', '/repair/wpsId', 'wpsId');
    if not exists (select from weld_public.wps w where w.tenant_id = weld.tenant_id and w.id = wps) then
      perform weld_private.invalid_input(format('there is no WPS %s', wps), '/repair/wpsId');
    end if;
  end if;
  if jsonb_typeof(repair -> 'preheatF') is distinct from 'null' and repair ? 'preheatF' then
    if jsonb_typeof(repair -> 'preheatF') <> 'number' or (repair ->> 'preheatF')::numeric not between 0 and 1500
       or (repair ->> 'preheatF')::numeric <> trunc((repair ->> 'preheatF')::numeric) then
      perform weld_private.invalid_input('preheatF must be a whole number from 0 to 1500', '/repair/preheatF');
    end if;
    preheat := (repair ->> 'preheatF')::integer;
  end if;

  begin
    update weld_public.weld_repairs p
       set rewelded_at = now(),
           welded_on = case when repair ? 'weldedOn' then day else p.welded_on end,
           welder_id = case when repair ? 'welderId' then welder else p.welder_id end,
           wps_id = case when repair ? 'wpsId' then wps else p.wps_id end,
           preheat_f = case when repair ? 'preheatF' then preheat else p.preheat_f end
     where p.tenant_id = weld.tenant_id and p.weld_id = weld.id and p.repair_cycle = weld.repair_cycle;
  exception when sqlstate 'WD007' then
    -- The repair's own rules speak of its fields; here they are under /repair.
    get stacked diagnostics problem_message = message_text, problem_pointer = pg_exception_detail;
    perform weld_private.invalid_input(problem_message,
      '/repair' || coalesce((problem_pointer::jsonb) ->> 'pointer', ''));
  end;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.record_repair_welding.sql
--! Included functions/weld_private.tg_welds__acceptance_cleared.sql
-- A weld not ACCEPTED rests on no acceptance: whoever moves it out of ACCEPTED (the lifecycle, or
-- a DBA's UPDATE of its status), its acceptance's basis goes with it, so the row never shows the
-- basis of an acceptance it no longer has (CHECK welds_acceptance_basis holds that too).
create or replace function weld_private.tg_welds__acceptance_cleared() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
begin
  new.acceptance_ndt_record_id := null;
  new.acceptance_inspection_id := null;
  new.acceptance_disposition := null;
  return new;
end
$$;

create or replace trigger _060_acceptance_cleared before update on weld_public.welds
  for each row
  when (new.status <> 'ACCEPTED'
        and num_nonnulls(new.acceptance_ndt_record_id, new.acceptance_inspection_id,
                         new.acceptance_disposition) > 0)
  execute function weld_private.tg_welds__acceptance_cleared();
--! EndIncluded functions/weld_private.tg_welds__acceptance_cleared.sql
--! Included functions/weld_public.change_weld_status.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- The one way a weld's status changes.
--
-- Locks the weld, checks the expected version, the rule for (current -> new) and the caller's
-- role, requires a reason where the rule does, applies the change (the touch trigger bumps the
-- version; REJECTED -> REPAIR adds a repair cycle) and appends the history row. Refusals carry
-- the service's own SQLSTATEs, which the server maps to HTTP once:
--   WD001 weld not found (or not this tenant's)         -> 404
--   WD002 transition not allowed; DETAIL is JSON {"allowed": [...]}, the statuses the rules
--         allow from the current one                      -> 409
--   WD003 the caller's role may not make this change     -> 403
--   WD004 the rule requires a reason                      -> 422
--   WD005 the weld changed since expected_version; DETAIL {"version": n} -> 412
--   WD007 the basis or the repair's data is not valid; DETAIL {"pointer"} -> 422
--   WD012 an examination of the weld is still owed (a repair's re-examination, or a selection
--         of it not yet examined): it is not ACCEPTED; DETAIL {"checks": [...]} -> 409
--
-- An acceptance names its basis, one of
--   ndt_record_id   an NDT record that covers the weld and accepted it, dated on or after it was
--                   last welded (an NDT result applied by weld_public.record_ndt names its record
--                   so: the history's cause is then 'ndt')
--   inspection_id   a visual or final inspection that covers the weld and accepted it, likewise
--   disposition     an engineer's documented disposition (a use-as-is decision), engineers only
-- and none is named by any other change. The weld keeps its current basis (acceptance_*), the
-- history every one.
--
-- A repair: REJECTED -> REPAIR opens its weld_repairs row; REPAIR -> PENDING (re-welded) may carry
-- `repair`, {"weldedOn", "welderId", "wpsId", "preheatF"}, the repair's own welding (each may be
-- recorded later on the repair itself).
--
-- SECURITY DEFINER as weld_rules (NOBYPASSRLS): it may write what callers may not, and row
-- security keeps it inside the caller's tenant.
create or replace function weld_public.change_weld_status(
  weld_id uuid,
  new_status weld_public.weld_status,
  reason text default null,
  expected_version integer default null,
  ndt_record_id uuid default null,
  inspection_id uuid default null,
  disposition text default null,
  repair jsonb default null
) returns weld_public.welds
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  weld weld_public.welds;
  rule weld_public.weld_transition_rules;
  caller weld_public.user_role := weld_hidden.request_role();
  -- An NDT result being applied (weld_private.ndt_apply_status_changes names its record), not a
  -- person naming a record as the basis of their acceptance.
  applying boolean := coalesce(change_weld_status.ndt_record_id::text
                               = nullif(pg_catalog.current_setting('weld.applying_ndt_record', true), ''),
                               false);
  basis_disposition text := nullif(btrim(change_weld_status.disposition), '');
  last_welded date;
  held record;
  allowed text[];
begin
  -- An OAuth2 client's scopes (000045): a change an NDT record causes is the NDT area's.
  perform weld_hidden.require_scope(case when applying then '{ndt:write}' else '{welds:write}' end::text[]);
  select * into weld from weld_public.welds w
   where w.tenant_id = weld_hidden.current_tenant_id() and w.id = change_weld_status.weld_id
   for update;
  if not found then
    raise exception 'weld % not found', change_weld_status.weld_id using errcode = 'WD001';
  end if;

  if expected_version is not null and expected_version <> weld.version then
    raise exception 'weld % is at version %, not %', weld.id, weld.version, expected_version
      using errcode = 'WD005', detail = json_build_object('version', weld.version)::text;
  end if;

  select * into rule from weld_public.weld_transition_rules r
   where r.tenant_id = weld.tenant_id and r.from_status = weld.status and r.to_status = new_status;
  if not found then
    select coalesce(array_agg(r.to_status::text order by r.to_status), '{}') into allowed
      from weld_public.weld_transition_rules r
     where r.tenant_id = weld.tenant_id and r.from_status = weld.status;
    raise exception 'a weld cannot go from % to %', weld.status, new_status
      using errcode = 'WD002', detail = json_build_object('allowed', allowed)::text;
  end if;

  if caller is null or caller < rule.least_role then
    raise exception 'going from % to % needs the % role', weld.status, new_status, rule.least_role
      using errcode = 'WD003';
  end if;

  if rule.reason_required and coalesce(btrim(reason), '') = '' then
    raise exception 'going from % to % needs a reason', weld.status, new_status
      using errcode = 'WD004';
  end if;

  -- The basis of an acceptance, and of nothing else (an NDT result applied names its record as
  -- the cause of any move).
  if new_status <> 'ACCEPTED' then
    if num_nonnulls(case when not applying then change_weld_status.ndt_record_id end,
                    change_weld_status.inspection_id, basis_disposition) > 0 then
      perform weld_private.invalid_input('only an acceptance names a basis (ndtRecordId, inspectionId or disposition)',
        case when change_weld_status.ndt_record_id is not null then '/ndtRecordId'
             when change_weld_status.inspection_id is not null then '/inspectionId' else '/disposition' end);
    end if;
  else
    if num_nonnulls(change_weld_status.ndt_record_id, change_weld_status.inspection_id, basis_disposition) <> 1 then
      perform weld_private.invalid_input(
        'an acceptance names its basis, one of: ndtRecordId (an NDT record that accepted the weld), inspectionId (a visual or final inspection that accepted it) or, for an engineer, disposition',
        '');
    end if;
    -- What it rests on must have been done on the weld as it is: since it was last welded.
    select greatest(weld.welded_on, max(coalesce(p.welded_on, (p.rewelded_at at time zone 'UTC')::date)))
      into last_welded
      from weld_public.weld_repairs p
     where p.tenant_id = weld.tenant_id and p.weld_id = weld.id;
    if change_weld_status.ndt_record_id is not null and not applying and not exists (
      select from weld_private.weld_examinations e
       where e.tenant_id = weld.tenant_id and e.weld_id = weld.id
         and e.ndt_record_id = change_weld_status.ndt_record_id and e.result = 'accepted'
         and e.examined_on >= last_welded
    ) then
      perform weld_private.invalid_input(format(
        'is no NDT record of this weld that accepted it on or after %s, when it was last welded',
        coalesce(last_welded::text, '(not yet welded)')), '/ndtRecordId');
    end if;
    if change_weld_status.inspection_id is not null and not exists (
      select from weld_public.inspection_welds iw
        join weld_public.inspections i on i.tenant_id = iw.tenant_id and i.id = iw.inspection_id
       where iw.tenant_id = weld.tenant_id and iw.weld_id = weld.id
         and iw.inspection_id = change_weld_status.inspection_id
         and i.kind in ('visual', 'final') and i.result = 'accepted' and i.inspected_on >= last_welded
    ) then
      perform weld_private.invalid_input(format(
        'is no visual or final inspection of this weld that accepted it on or after %s, when it was last welded',
        coalesce(last_welded::text, '(not yet welded)')), '/inspectionId');
    end if;
    if basis_disposition is not null and caller < 'engineer' then
      raise exception 'accepting a weld on a disposition needs the engineer role' using errcode = 'WD003';
    end if;
    if char_length(basis_disposition) > 2000 then
      perform weld_private.invalid_input('must be at most 2000 characters', '/disposition');
    end if;
    -- The status tells the truth: not ACCEPTED while an examination of it is owed.
    select * into held from weld_private.acceptance_held(weld.id);
    if found then
      raise exception 'weld % is not accepted: %', weld.weld_number, held.detail
        using errcode = 'WD012',
              detail = jsonb_build_object('checks', jsonb_build_array(
                         jsonb_build_object('code', held.code, 'detail', held.detail)))::text;
    end if;
  end if;

  if applying and not exists (
    select from weld_public.ndt_record_welds nw
     where nw.tenant_id = weld.tenant_id and nw.ndt_record_id = change_weld_status.ndt_record_id
       and nw.weld_id = weld.id
  ) then
    raise exception 'NDT record % does not cover weld %', change_weld_status.ndt_record_id, weld.id
      using errcode = '22023';
  end if;

  if repair is not null and not (weld.status = 'REPAIR' and new_status = 'PENDING') then
    perform weld_private.invalid_input(
      'a repair''s welding is recorded when the repaired weld is re-welded (REPAIR -> PENDING)', '/repair');
  end if;

  update weld_public.welds w
     set status = new_status,
         repair_cycle = w.repair_cycle
           + case when weld.status = 'REJECTED' and new_status = 'REPAIR' then 1 else 0 end,
         acceptance_ndt_record_id = case when new_status = 'ACCEPTED' then change_weld_status.ndt_record_id end,
         acceptance_inspection_id = case when new_status = 'ACCEPTED' then change_weld_status.inspection_id end,
         acceptance_disposition = case when new_status = 'ACCEPTED' then basis_disposition end
   where w.tenant_id = weld.tenant_id and w.id = weld.id
  returning * into weld;

  if rule.from_status = 'REJECTED' and new_status = 'REPAIR' then
    insert into weld_public.weld_repairs (tenant_id, weld_id, repair_cycle, released_by)
    values (weld.tenant_id, weld.id, weld.repair_cycle, weld_hidden.current_user_id());
  elsif rule.from_status = 'REPAIR' and new_status = 'PENDING' then
    perform weld_private.record_repair_welding(weld, coalesce(repair, '{}'));
  end if;

  insert into weld_public.weld_status_history
    (tenant_id, weld_id, from_status, to_status, reason, changed_by, repair_cycle, cause,
     ndt_record_id, inspection_id, disposition)
  values
    (weld.tenant_id, weld.id, rule.from_status, rule.to_status, nullif(btrim(reason), ''),
     weld_hidden.current_user_id(), weld.repair_cycle, case when applying then 'ndt' else 'user' end,
     change_weld_status.ndt_record_id, change_weld_status.inspection_id, basis_disposition);

  return weld;
end
$$;

comment on function weld_public.change_weld_status(uuid, weld_public.weld_status, text, integer, uuid, uuid, text, jsonb) is
  'Moves a weld to a new status under the tenant''s transition rules, and records it in the history. An acceptance names its basis (ndtRecordId, inspectionId, or an engineer''s disposition) and is refused while an examination of the weld is owed; a re-weld (REPAIR -> PENDING) may record the repair''s welding (repair: weldedOn, welderId, wpsId, preheatF).';

grant execute on function weld_public.change_weld_status(uuid, weld_public.weld_status, text, integer, uuid, uuid, text, jsonb) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.change_weld_status.sql
--! Included functions/weld_private.tg_weld_repairs__welding.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A repair's welding as recorded (weld_public.weld_repairs), after each change of it:
--   - its date welded is on or after the day the weld was made, the previous repair's, and every
--     examination recorded before the weld was released for this repair (they examined the weld
--     the repair mends: a repair dated before them would let the rejecting record meet its own
--     re-examination), and not after an examination recorded since the release (that examination
--     is the repair's: the repair was made before it); WD007 naming weldedOn;
--   - where the tenant refuses failing welds (tenant_settings.weld_checks = 'refuse'), a repair
--     whose welder or WPS fails the checks (WELDER_NOT_QUALIFIED, WPS_*, named "repair N: ...")
--     is refused like a weld's write (WD010). Requests only.
create or replace function weld_private.tg_weld_repairs__welding() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  weld weld_public.welds;
  earlier date;
  effective date := coalesce(new.welded_on, (new.rewelded_at at time zone 'UTC')::date);
  later record;
  refused jsonb;
begin
  select * into weld from weld_public.welds w where w.tenant_id = new.tenant_id and w.id = new.weld_id;
  if new.welded_on is not null and new.welded_on is distinct from old.welded_on then
    if new.welded_on < weld.welded_on then
      perform weld_private.invalid_input(format(
        'must be on or after %s, when weld %s was made', weld.welded_on, weld.weld_number), '/weldedOn');
    end if;
    select max(p.welded_on) into earlier
      from weld_public.weld_repairs p
     where p.tenant_id = new.tenant_id and p.weld_id = new.weld_id and p.repair_cycle < new.repair_cycle;
    if new.welded_on < earlier then
      perform weld_private.invalid_input(format(
        'must be on or after %s, when the weld''s previous repair was welded', earlier), '/weldedOn');
    end if;
    select x.record, x.examined_on into later
      from weld_private.weld_examinations x
     where x.tenant_id = new.tenant_id and x.weld_id = new.weld_id and x.created_at <= new.released_at
       and x.examined_on > new.welded_on
     order by x.examined_on desc
     limit 1;
    if found then
      perform weld_private.invalid_input(format(
        'must be on or after %s, when %s examined the weld before its release for repair %s',
        later.examined_on, later.record, new.repair_cycle), '/weldedOn');
    end if;
  end if;
  if effective is not null then
    select x.record, x.examined_on into later
      from weld_private.weld_examinations x
     where x.tenant_id = new.tenant_id and x.weld_id = new.weld_id and x.created_at > new.released_at
       and x.examined_on < effective
     order by x.examined_on
     limit 1;
    if found then
      perform weld_private.invalid_input(format(
        '%s of %s examined the weld since it was released for repair %s: the repair was welded on or before that day',
        later.record, later.examined_on, new.repair_cycle), '/weldedOn');
    end if;
  end if;

  if weld_hidden.request_role() is not null
     and coalesce((select s.weld_checks from weld_public.tenant_settings s
                    where s.tenant_id = new.tenant_id), 'show') = 'refuse'
     and (new.welder_id, new.wps_id, new.welded_on) is distinct from (old.welder_id, old.wps_id, old.welded_on) then
    select jsonb_agg(jsonb_build_object('code', p.code, 'detail', p.detail) order by p.code, p.detail)
      into refused
      from weld_private.weld_problems(array[weld]) p
     where weld_private.check_refuses(p.code) and p.detail like format('repair %s: %%', new.repair_cycle);
    if refused is not null then
      raise exception 'repair % of weld % fails the code checks: %', new.repair_cycle, weld.weld_number,
        (select string_agg(distinct c ->> 'code', ', ') from jsonb_array_elements(refused) c)
        using errcode = 'WD010', detail = jsonb_build_object('checks', refused)::text;
    end if;
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _200_welding after update on weld_public.weld_repairs
  for each row execute function weld_private.tg_weld_repairs__welding();
--! EndIncluded functions/weld_private.tg_weld_repairs__welding.sql
--! Included functions/weld_private.tg_weld_status_history__follow.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- After a status change: a weld leaving REPAIR owes what rejected it; a weld leaving ACCEPTED
-- (or VOIDED, which readiness passes over) locks its packages.
create or replace function weld_private.tg_weld_status_history__follow() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  last_reweld date;
begin
  if new.from_status in ('ACCEPTED', 'VOIDED') and new.to_status not in ('ACCEPTED', 'VOIDED') then
    perform weld_private.lock_packages_of(array[new.weld_id]);
  end if;
  if new.from_status = 'REPAIR' and new.to_status <> 'VOIDED' then
    -- The methods that rejected it since its previous repair was welded (or ever, at the first).
    select coalesce(p.welded_on, (p.rewelded_at at time zone 'UTC')::date) into last_reweld
      from weld_public.weld_repairs p
     where p.tenant_id = new.tenant_id and p.weld_id = new.weld_id
       and p.repair_cycle = new.repair_cycle - 1;
    insert into weld_public.weld_reexaminations (tenant_id, weld_id, method, repair_cycle, rewelded_on, cause)
    select new.tenant_id, new.weld_id, e.method, new.repair_cycle, (new.changed_at at time zone 'UTC')::date,
           (array_agg(e.record || ' of ' || e.examined_on order by e.examined_on desc, e.created_at desc))[1]
      from weld_private.weld_examinations e
     where e.tenant_id = new.tenant_id and e.weld_id = new.weld_id and e.result = 'rejected'
       and (last_reweld is null or e.examined_on >= last_reweld)
     group by e.method
    on conflict do nothing;
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _200_follow after insert on weld_public.weld_status_history
  for each row
  when ((new.from_status in ('ACCEPTED', 'VOIDED') and new.to_status not in ('ACCEPTED', 'VOIDED'))
        or new.from_status = 'REPAIR')
  execute function weld_private.tg_weld_status_history__follow();
--! EndIncluded functions/weld_private.tg_weld_status_history__follow.sql
--! Included functions/weld_private.tg_weld_status_history__ndt_cause.sql
-- Only the NDT functions may name an NDT record as the cause of a weld's move (cause 'ndt'): a
-- person may name one only as the basis of an acceptance (cause 'user'). change_weld_status sets
-- the cause from the transaction-local setting weld.applying_ndt_record, which
-- ndt_apply_status_changes sets while it applies that very record (the record's id; '' after);
-- this guard holds it for every writer of a request, refusing (42501) an 'ndt' row naming another
-- record. API callers cannot set the setting: REST and GraphQL run only the statements the server
-- writes. Writes outside a request (the seed generator, a DBA) are not refused. SECURITY INVOKER:
-- it reads settings only.
create or replace function weld_private.tg_weld_status_history__ndt_cause() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if new.cause = 'ndt' and weld_hidden.request_role() is not null
     and new.ndt_record_id::text is distinct from
         nullif(pg_catalog.current_setting('weld.applying_ndt_record', true), '') then
    raise exception 'only recording an NDT result may name an NDT record as the cause'
      using errcode = '42501';
  end if;
  return new;
end
$$;

create or replace trigger _100_ndt_cause before insert on weld_public.weld_status_history
  for each row execute function weld_private.tg_weld_status_history__ndt_cause();
--! EndIncluded functions/weld_private.tg_weld_status_history__ndt_cause.sql
--! Included functions/weld_private.ndt_apply_status_changes.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Step 2, once the record is written: each move through change_weld_status, caused by the record.
-- An acceptance of a weld that still owes another examination (a repair's re-examination by the
-- method that rejected it, or a selection of another method: weld_private.acceptance_held) does
-- not move it: the weld stays where it is, and the record's row for it says why
-- (ndt_record_welds.acceptance_held), which the record's answer shows. A move that is no longer
-- held clears it (a correction).
create or replace function weld_private.ndt_apply_status_changes(
  ndt weld_public.ndt_records, moves jsonb
) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  move record;
  held text;
begin
  perform pg_catalog.set_config('weld.applying_ndt_record', ndt.id::text, true);
  for move in
    select (m ->> 'weldId')::uuid as weld_id, (m ->> 'status')::weld_public.weld_status as status,
           m ->> 'result' as result
      from jsonb_array_elements(moves) as m
  loop
    held := null;
    if move.status = 'ACCEPTED' then
      select h.detail into held from weld_private.acceptance_held(move.weld_id) h;
    end if;
    update weld_public.ndt_record_welds nw
       set acceptance_held = held
     where nw.tenant_id = ndt.tenant_id and nw.ndt_record_id = ndt.id and nw.weld_id = move.weld_id
       and nw.acceptance_held is distinct from held;
    if held is null then
      perform weld_public.change_weld_status(
        move.weld_id, move.status, format('%s report %s: %s', ndt.method, ndt.report_number, move.result),
        null, ndt.id);
    end if;
  end loop;
  perform pg_catalog.set_config('weld.applying_ndt_record', '', true);
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_apply_status_changes.sql
--! Included functions/weld_private.tg__examination_weld_link.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The link without its tenant and record: {"weld_id"}, and "result" and "defect_length_in" for
-- NDT records.
create or replace function weld_private.tg__examination_weld_link() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  link jsonb;
  record_id uuid;
  diff record;
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  if tg_op = 'DELETE' then
    link := to_jsonb(old) - 'acceptance_held';
  else
    link := to_jsonb(new) - 'acceptance_held';
  end if;
  record_id := (link ->> tg_argv[1])::uuid;
  if tg_op = 'INSERT' then
    if weld_private.examination_created_in_this_transaction(tg_argv[0], new.tenant_id, record_id) then
      return null;
    end if;
    insert into weld_public.examination_changes
      (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, tg_argv[0], record_id, 'weld_added', null,
            link - 'tenant_id' - tg_argv[1], weld_hidden.current_user_id());
  elsif tg_op = 'UPDATE' then
    -- (Whether an acceptance was held is the lifecycle's note, not a change of the record.)
    select * into diff
      from weld_private.changed_columns(to_jsonb(old) - 'acceptance_held', to_jsonb(new) - 'acceptance_held');
    if diff.before is not null then
      insert into weld_public.examination_changes
        (tenant_id, subject, record_id, change, before, after, changed_by)
      values (new.tenant_id, tg_argv[0], record_id, 'weld_updated',
              jsonb_build_object('weld_id', old.weld_id) || diff.before,
              jsonb_build_object('weld_id', new.weld_id) || diff.after,
              weld_hidden.current_user_id());
    end if;
  else
    insert into weld_public.examination_changes
      (tenant_id, subject, record_id, change, before, after, changed_by)
    values (old.tenant_id, tg_argv[0], record_id, 'weld_removed',
            link - 'tenant_id' - tg_argv[1], null, weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _900_examination_change after insert or delete on weld_public.inspection_welds
  for each row execute function weld_private.tg__examination_weld_link('inspection', 'inspection_id');
create or replace trigger _900_examination_change after insert or update or delete on weld_public.ndt_record_welds
  for each row execute function weld_private.tg__examination_weld_link('ndt_record', 'ndt_record_id');
--! EndIncluded functions/weld_private.tg__examination_weld_link.sql
--! Included functions/weld_private.ndt_welds_input.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The welds of an NDT record as given (input->'welds'): 1 to 200 (an RT report covers a few
-- dozen), each once, as [{"weldId", "result" (null: derive it), "defectLengthIn", "pointer"}]. A
-- defect length (inches, over 0) is given with a result that is not accepted.
create or replace function weld_private.ndt_welds_input(input jsonb, pointer text) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  list jsonb := weld_private.json_list(input, 'welds', pointer, 1, 200);
  item jsonb;
  n integer;
  here text;
  weld jsonb;
  verdict text;
  welds jsonb := '[]';
begin
  for item, n in select e, o::integer - 1 from jsonb_array_elements(list) with ordinality as a (e, o) loop
    here := format('%s/welds/%s', pointer, n);
    perform weld_private.check_object(item, here, format('weld %s', n + 1),
      '{weldId,result,defectLengthIn}', '{weldId}');
    weld := to_jsonb(weld_private.json_uuid(item -> 'weldId', here || '/weldId', 'weldId'));
    if welds @> jsonb_build_array(jsonb_build_object('weldId', weld)) then
      perform weld_private.invalid_input(format('weld %s is listed twice', weld #>> '{}'), here || '/weldId');
    end if;
    verdict := weld_private.json_choice(item, 'result', here, '{accepted,rejected}', true);
    welds := welds || jsonb_build_array(jsonb_build_object(
      'weldId', weld,
      'result', verdict,
      'defectLengthIn', weld_private.json_defect_length(item, here, verdict),
      'pointer', here));
  end loop;
  return welds;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_welds_input.sql
--! Included functions/weld_private.ndt_intervals_input.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The film intervals of an NDT record as given (input->'filmIntervals'): up to 500 (a few per
-- weld), labels distinct, each showing 1 to 20 welds (one, or two where welds meet), at most
-- 1000 in all, as [{"label", "result", "defectCodes", "defectLengthIn", "weldIds", "pointer"}]; a
-- defect length (inches, over 0) only on a rejected interval.
create or replace function weld_private.ndt_intervals_input(input jsonb, pointer text) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  list jsonb := weld_private.json_list(input, 'filmIntervals', pointer, 0, 500);
  item jsonb;
  n integer;
  here text;
  interval_label text;
  verdict text;
  codes jsonb;
  code jsonb;
  k integer;
  weld_ids jsonb;
  mappings integer := 0;
  intervals jsonb := '[]';
begin
  for item, n in select e, o::integer - 1 from jsonb_array_elements(list) with ordinality as a (e, o) loop
    here := format('%s/filmIntervals/%s', pointer, n);
    perform weld_private.check_object(item, here, format('film interval %s', n + 1),
      '{label,result,defectCodes,defectLengthIn,weldIds}', '{label,result,defectCodes,weldIds}');
    interval_label := weld_private.json_string(item, 'label', here, 1, 21, false);
    if interval_label !~ '^[0-9A-Za-z]{1,10}-[0-9A-Za-z]{1,10}$' then
      perform weld_private.invalid_input('label must be two location markers, e.g. 0-1', here || '/label');
    end if;
    if intervals @> jsonb_build_array(jsonb_build_object('label', interval_label)) then
      perform weld_private.invalid_input(format('film interval %s is listed twice', interval_label),
                                         here || '/label');
    end if;
    verdict := weld_private.json_choice(item, 'result', here, '{accepted,rejected}', false);
    codes := weld_private.json_list(item, 'defectCodes', here, 0, 50);
    for code, k in select e, o::integer - 1 from jsonb_array_elements(codes) with ordinality as a (e, o) loop
      if jsonb_typeof(code) <> 'string' or char_length(code #>> '{}') not between 1 and 20 then
        perform weld_private.invalid_input('a defect code must be a string of 1 to 20 characters',
                                           format('%s/defectCodes/%s', here, k));
      end if;
    end loop;
    if verdict = 'rejected' and jsonb_array_length(codes) = 0 then
      perform weld_private.invalid_input(
        format('film interval %s is rejected, so it needs a defect code', interval_label),
        here || '/defectCodes');
    end if;
    weld_ids := weld_private.json_uuid_list(item, 'weldIds', here, 1, 20);
    mappings := mappings + jsonb_array_length(weld_ids);
    if mappings > 1000 then
      perform weld_private.invalid_input('the film intervals may show at most 1000 welds in all',
                                         pointer || '/filmIntervals');
    end if;
    intervals := intervals || jsonb_build_array(jsonb_build_object(
      'label', interval_label,
      'result', verdict,
      'defectCodes', codes,
      'defectLengthIn', weld_private.json_defect_length(item, here, verdict),
      'weldIds', weld_ids,
      'pointer', here));
  end loop;
  return intervals;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_intervals_input.sql
--! Included functions/weld_private.ndt_write_lists.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Makes an NDT record's welds and film what `welds` and `intervals` say (as ndt_welds_input and
-- ndt_intervals_input return them), writing only what differs, so the history holds only real
-- changes: what goes first, then what changes, then what is new. A weld removed takes its film
-- mappings with it; an interval removed, its mappings.
create or replace function weld_private.ndt_write_lists(
  tenant uuid, record_id uuid, welds jsonb, intervals jsonb
) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  delete from weld_public.film_interval_welds fw
   using weld_public.film_intervals f
   where f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id
     and fw.tenant_id = f.tenant_id and fw.film_interval_id = f.id
     and not exists (select from jsonb_array_elements(intervals) as i
                      where i ->> 'label' = f.label and i -> 'weldIds' ? fw.weld_id::text);
  delete from weld_public.film_intervals f
   where f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id
     and not intervals @> jsonb_build_array(jsonb_build_object('label', f.label));
  delete from weld_public.ndt_record_welds nw
   where nw.tenant_id = tenant and nw.ndt_record_id = ndt_write_lists.record_id
     and not welds @> jsonb_build_array(jsonb_build_object('weldId', nw.weld_id));

  update weld_public.ndt_record_welds nw
     set result = w ->> 'result', defect_length_in = (w ->> 'defectLengthIn')::numeric
    from jsonb_array_elements(welds) as w
   where nw.tenant_id = tenant and nw.ndt_record_id = ndt_write_lists.record_id
     and nw.weld_id = (w ->> 'weldId')::uuid
     and (nw.result, nw.defect_length_in) is distinct from (w ->> 'result', (w ->> 'defectLengthIn')::numeric);
  update weld_public.film_intervals f
     set result = i ->> 'result',
         defect_codes = array(select jsonb_array_elements_text(i -> 'defectCodes')),
         defect_length_in = (i ->> 'defectLengthIn')::numeric
    from jsonb_array_elements(intervals) as i
   where f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id
     and f.label = i ->> 'label'
     and (f.result, f.defect_codes, f.defect_length_in) is distinct from
         (i ->> 'result', array(select jsonb_array_elements_text(i -> 'defectCodes')),
          (i ->> 'defectLengthIn')::numeric);

  insert into weld_public.ndt_record_welds (ndt_record_id, weld_id, result, defect_length_in)
  select ndt_write_lists.record_id, (w ->> 'weldId')::uuid, w ->> 'result',
         (w ->> 'defectLengthIn')::numeric
    from jsonb_array_elements(welds) as w
   where not exists (select from weld_public.ndt_record_welds nw
                      where nw.tenant_id = tenant and nw.ndt_record_id = ndt_write_lists.record_id
                        and nw.weld_id = (w ->> 'weldId')::uuid);
  insert into weld_public.film_intervals (ndt_record_id, label, result, defect_codes, defect_length_in)
  select ndt_write_lists.record_id, i ->> 'label', i ->> 'result',
         array(select jsonb_array_elements_text(i -> 'defectCodes')), (i ->> 'defectLengthIn')::numeric
    from jsonb_array_elements(intervals) as i
   where not exists (select from weld_public.film_intervals f
                      where f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id
                        and f.label = i ->> 'label');
  insert into weld_public.film_interval_welds (ndt_record_id, film_interval_id, weld_id)
  select ndt_write_lists.record_id, f.id, w.weld_id::uuid
    from jsonb_array_elements(intervals) as i
    join weld_public.film_intervals f
      on f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id and f.label = i ->> 'label'
    cross join lateral jsonb_array_elements_text(i -> 'weldIds') as w (weld_id)
   where not exists (select from weld_public.film_interval_welds fw
                      where fw.tenant_id = tenant and fw.film_interval_id = f.id
                        and fw.weld_id = w.weld_id::uuid);
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_write_lists.sql
--! Included functions/weld_hidden.ndt_record_welds_json.sql
-- An NDT record's welds with their results (given, or derived from the film for RT), the defects'
-- length and why an acceptance did not move the weld: shared by the REST reads
-- (rest-adapter/ndt-records.ts) and the events.
create or replace function weld_hidden.ndt_record_welds_json(record weld_public.ndt_records) returns jsonb
  language sql stable parallel safe
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
           'weldId', w.weld_id,
           'result', weld_public.ndt_record_welds_effective_result(w),
           'defectLengthIn', w.defect_length_in::float8,
           'acceptanceHeld', w.acceptance_held) order by w.weld_id),
         '[]'::jsonb)
    from weld_public.ndt_record_welds w
   where w.tenant_id = record.tenant_id and w.ndt_record_id = record.id
$$;

grant execute on function weld_hidden.ndt_record_welds_json(weld_public.ndt_records) to weld_viewer;
--! EndIncluded functions/weld_hidden.ndt_record_welds_json.sql
--! Included functions/weld_hidden.ndt_record_film_json.sql
create or replace function weld_hidden.ndt_record_film_json(record weld_public.ndt_records) returns jsonb
  language sql stable parallel safe
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', f.id, 'label', f.label, 'result', f.result, 'defectCodes', f.defect_codes,
           'defectLengthIn', f.defect_length_in::float8,
           'weldIds', array(select fw.weld_id from weld_public.film_interval_welds fw
                             where fw.tenant_id = f.tenant_id and fw.film_interval_id = f.id
                             order by fw.weld_id)) order by f.label),
         '[]'::jsonb)
    from weld_public.film_intervals f
   where f.tenant_id = record.tenant_id and f.ndt_record_id = record.id
$$;

grant execute on function weld_hidden.ndt_record_film_json(weld_public.ndt_records) to weld_viewer;
--! EndIncluded functions/weld_hidden.ndt_record_film_json.sql
--! Included functions/weld_public.correct_ndt_record.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.correct_ndt_record(
  record_id uuid, changes jsonb, reason text, expected_version integer default null
) returns weld_public.ndt_records
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  input jsonb := correct_ndt_record.changes;
  why text;
  previous_reason text := pg_catalog.current_setting('weld.change_reason', true);
  ndt weld_public.ndt_records;
  fixed weld_public.ndt_records;
  old_welds jsonb;
  old_intervals jsonb;
  welds jsonb;
  intervals jsonb;
  results jsonb;
  moves jsonb;
begin
  perform weld_hidden.require_scope('{ndt:write}'); -- an OAuth2 client's scopes (000045)
  perform weld_private.require_role('inspector', 'correcting an NDT record');
  select * into ndt from weld_public.ndt_records r
   where r.tenant_id = tenant and r.id = correct_ndt_record.record_id
     for no key update; -- not FOR UPDATE: a draw's selection citing it (KEY SHARE) must not wait on it
  why := weld_private.check_correction('ndt record', correct_ndt_record.record_id, found,
                                       ndt.version, expected_version, correct_ndt_record.reason);
  if jsonb_typeof(input) = 'object' and input ? 'method' then
    perform weld_private.invalid_input(
      'the method of an NDT record cannot be corrected; record a new report instead', '/method');
  end if;
  perform weld_private.check_object(input, '', 'a correction of an NDT record',
    '{reportNumber,examinedOn,technician,notes,welds,filmIntervals}', '{}');

  fixed := ndt;
  if input ? 'reportNumber' then
    fixed.report_number := weld_private.json_string(input, 'reportNumber', '', 1, 100, false);
  end if;
  if input ? 'examinedOn' then
    fixed.examined_on := weld_private.json_date(input, 'examinedOn', '');
  end if;
  if input ? 'technician' then
    fixed.technician := weld_private.json_string(input, 'technician', '', 0, 200, true);
  end if;
  if input ? 'notes' then
    fixed.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  end if;

  -- The lists as they are, in the shape of the inputs (without pointers: not in this input).
  select coalesce(jsonb_agg(jsonb_build_object('weldId', nw.weld_id, 'result', nw.result,
                                               'defectLengthIn', nw.defect_length_in)
                            order by nw.weld_id), '[]')
    into old_welds
    from weld_public.ndt_record_welds nw
   where nw.tenant_id = tenant and nw.ndt_record_id = ndt.id;
  select coalesce(jsonb_agg(jsonb_build_object(
           'label', f.label, 'result', f.result, 'defectCodes', to_jsonb(f.defect_codes),
           'defectLengthIn', f.defect_length_in,
           'weldIds', (select coalesce(jsonb_agg(fw.weld_id order by fw.weld_id), '[]')
                         from weld_public.film_interval_welds fw
                        where fw.tenant_id = f.tenant_id and fw.film_interval_id = f.id))
         order by f.label), '[]')
    into old_intervals
    from weld_public.film_intervals f
   where f.tenant_id = tenant and f.ndt_record_id = ndt.id;

  welds := old_welds;
  if input ? 'welds' then
    welds := weld_private.ndt_welds_input(input, '');
  end if;
  intervals := old_intervals;
  if input ? 'filmIntervals' then
    intervals := weld_private.ndt_intervals_input(input, '');
  end if;
  results := weld_private.ndt_results(ndt.method, welds, intervals,
    case when input ? 'welds' then '/welds' when input ? 'filmIntervals' then '/filmIntervals' else '' end,
    case when input ? 'filmIntervals' then '/filmIntervals' when input ? 'welds' then '/welds' else '' end);
  fixed.result := case when results @> '[{"effective": "rejected"}]' then 'rejected' else 'accepted' end;

  perform weld_private.refuse_unwelded_examinations(
    weld_private.examination_links(weld_private.weld_ids_of(welds), fixed.examined_on,
                                   format('%s report %s', ndt.method, fixed.report_number)), 'ndt');
  -- Every line the record touches, before and after, before any weld lock.
  perform weld_private.lock_lines_of(weld_private.weld_ids_of(old_welds) || weld_private.weld_ids_of(welds));
  -- Only the welds whose result is new: added, or changed.
  moves := weld_private.ndt_status_changes((
    select coalesce(jsonb_agg(r order by n), '[]')
      from jsonb_array_elements(results) with ordinality as e (r, n)
     where not exists (
       select from jsonb_array_elements(old_welds) as o
        where o ->> 'weldId' = r ->> 'weldId'
          and coalesce(o ->> 'result', weld_private.ndt_film_result(old_intervals, o ->> 'weldId'))
              = r ->> 'effective')));

  -- The record's row first: its version is bumped once, and the lists' changes then leave it.
  perform pg_catalog.set_config('weld.change_reason', why, true);
  if (fixed.report_number, fixed.examined_on, fixed.technician, fixed.notes, fixed.result)
     is distinct from (ndt.report_number, ndt.examined_on, ndt.technician, ndt.notes, ndt.result) then
    update weld_public.ndt_records r
       set report_number = fixed.report_number, examined_on = fixed.examined_on,
           technician = fixed.technician, notes = fixed.notes, result = fixed.result
     where r.tenant_id = ndt.tenant_id and r.id = ndt.id;
  end if;
  if input ? 'welds' or input ? 'filmIntervals' then
    perform weld_private.ndt_write_lists(ndt.tenant_id, ndt.id, welds, intervals);
  end if;
  perform weld_private.ndt_apply_status_changes(fixed, moves);
  perform weld_private.follow_examination(ndt.method, weld_private.weld_ids_of(welds), ndt.id, null);
  perform pg_catalog.set_config('weld.change_reason', coalesce(previous_reason, ''), true);

  select * into fixed from weld_public.ndt_records r where r.tenant_id = ndt.tenant_id and r.id = ndt.id;
  return fixed;
end
$$;

comment on function weld_public.correct_ndt_record(uuid, jsonb, text, integer) is
  'Corrects an NDT record (welds and film intervals are replaced as a whole), with a reason kept in the examination history; welds whose result is new move under the transition rules.';

grant execute on function weld_public.correct_ndt_record(uuid, jsonb, text, integer) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.correct_ndt_record.sql
--! Included functions/weld_private.draw_next_tier.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Progressive examination (341.3.4) for one selection whose weld an examination rejected: the
-- next tier from its lot, of the same welder and the same kind of weld (341.3.4(a): "two
-- additional samples of the same kind"; weld_private.weld_kind: groove, socket, fillet). Nothing
-- for a full tier, a weld already repaired (original work only), or a selection that drew before.
-- A tier that finds fewer welds than it asks (two, or every remaining one for the full tier: none
-- left) says so on the rejected selection (examination_selections.shortfall). Returns the new
-- selections' ids.
create or replace function weld_private.draw_next_tier(
  cause_id uuid, ndt_record_id uuid, inspection_id uuid, record text
) returns uuid[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  cause record;
  next_tier text;
  kind text;
  kind_words text;
  cause_lot record;
  drawn uuid[];
begin
  select s.*, w.weld_number, w.welder_id, w.repair_cycle, w.type as weld_type, wr.stamp as welder_stamp,
         i.iso_number, i.line_number into cause
    from weld_public.examination_selections s
    join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
    left join weld_public.welders wr on wr.tenant_id = w.tenant_id and wr.id = w.welder_id
   where s.tenant_id = weld_hidden.current_tenant_id() and s.id = cause_id;
  if not found or cause.tier = 'full' or cause.repair_cycle > 0 then
    return '{}';
  end if;
  perform weld_private.lock_line(cause.line_number);
  -- Checked after the lock: another transaction may have drawn for it meanwhile.
  if exists (select from weld_public.examination_selections c
              where c.tenant_id = cause.tenant_id and c.cause_selection_id = cause.id)
     or cause.shortfall is not null then
    return '{}';
  end if;
  next_tier := case cause.tier when '1' then '2' when '2' then 'full' else '1' end;
  kind := weld_private.weld_kind(cause.weld_type);
  kind_words := case kind when 'groove' then 'groove welds' when 'socket' then 'socket welds'
                          else 'fillet welds' end;
  with candidates as (
    select * from weld_private.lot_candidates(array[cause.method], array[cause.line_number])
  ), picked as (
    insert into weld_public.examination_selections
      (weld_id, method, tier, seed, reason, cause_selection_id, cause_ndt_record_id,
       cause_inspection_id, selected_by)
    select c.weld_id, cause.method, next_tier, cause.seed,
           format('tier %s: %s rejected weld %s on ISO %s (%s selection); %s %s of welder %s in %s',
                  next_tier, record, cause.weld_number, cause.iso_number,
                  case when cause.tier in ('random', 'examined') then cause.tier else 'tier ' || cause.tier end,
                  case next_tier when 'full' then 'every remaining' else 'two more' end, kind_words,
                  coalesce(c.welder_stamp, '(none recorded)'), c.lot_name),
           cause.id, ndt_record_id, inspection_id, weld_hidden.current_user_id()
      from candidates c
     where c.lot = (select x.lot from candidates x where x.weld_id = cause.weld_id)
       and c.welder_id is not distinct from cause.welder_id
       and weld_private.weld_kind(c.weld_type) = kind
       and not exists (select from weld_public.examination_selections s
                        where s.tenant_id = cause.tenant_id and s.method = cause.method
                          and s.weld_id = c.weld_id)
       and (next_tier = 'full' or not exists (
             select from weld_private.weld_examinations e
              where e.tenant_id = cause.tenant_id and e.weld_id = c.weld_id and e.method = any(c.closes)))
     order by md5(coalesce(cause.seed::text, cause.id::text) || ':' || next_tier || ':'
                  || cause.weld_id::text || ':' || c.weld_id::text)
     limit case when next_tier = 'full' then null else 2 end
    returning id
  )
  select coalesce(array_agg(p.id), '{}') into drawn from picked p;

  if (next_tier <> 'full' and cardinality(drawn) < 2) or (next_tier = 'full' and cardinality(drawn) = 0) then
    select c.lot_name into cause_lot
      from weld_private.lot_candidates(array[cause.method], array[cause.line_number]) c
     where c.weld_id = cause.weld_id;
    update weld_public.examination_selections s
       set shortfall = format('tier %s asks for %s %s of welder %s in %s; %s',
                              next_tier, case next_tier when 'full' then 'every remaining' else 'two more' end,
                              kind_words, coalesce(cause.welder_stamp, '(none recorded)'),
                              coalesce(cause_lot.lot_name, 'the lot'),
                              case cardinality(drawn) when 0 then 'none is left' else 'only 1 is left' end)
     where s.tenant_id = cause.tenant_id and s.id = cause.id;
  end if;
  return drawn;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.draw_next_tier.sql
--! Included functions/weld_hidden.examination_selection_json.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- A selection as GET /examination-selections/{id} shows it: one shape for REST and the events.
create or replace function weld_hidden.examination_selection_json(s weld_public.examination_selections)
  returns jsonb
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'id', s.id, 'weldId', s.weld_id, 'isoId', w.iso_id, 'welderId', w.welder_id,
           'lineNumber', i.line_number, 'method', s.method, 'tier', s.tier, 'seed', s.seed,
           'reason', s.reason, 'causeSelectionId', s.cause_selection_id,
           'causeNdtRecordId', s.cause_ndt_record_id, 'causeInspectionId', s.cause_inspection_id,
           'ndtRecordId', e.ndt_record_id, 'inspectionId', e.inspection_id,
           'state', case when e.examined_on is null then 'open' else 'done' end,
           'shortfall', s.shortfall,
           'selectedBy', s.selected_by,
           'selectedAt', to_char(s.selected_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    from weld_public.welds w
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
    left join lateral weld_private.selection_examination(s) e on true
   where w.tenant_id = s.tenant_id and w.id = s.weld_id
$$;

grant execute on function weld_hidden.examination_selection_json(weld_public.examination_selections) to weld_viewer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.examination_selection_json.sql
--! Included functions/weld_private.wps_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- What keeps each WPS from being qualified by its PQRs: (wps_id, aspect, detail), aspect one of
-- pqr, process, thickness, p_number (each joint it covers: its P-numbers' and each additional
-- one, QW-424.1); none for a qualified WPS.
create or replace function weld_private.wps_problems(wps_ids uuid[])
  returns table (wps_id uuid, aspect text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select w.*, 'WPS ' || w.wps_number || ' rev ' || w.revision as name,
           weld_private.wps_joints(w.p_numbers, w.additional_joints) as joints,
           numrange(w.thickness_min_in, w.thickness_max_in, '[]') as thickness
      from weld_public.wps w
     where w.tenant_id = weld_hidden.current_tenant_id() and w.id = any(wps_ids)
  ), backing as (
    select w.id as wps_id, p.*, weld_private.p_joint(p.p_numbers[1], p.p_numbers[2]) as joint,
           weld_private.pqr_thickness_support(p.tenant_id, p.thickness_tested_in) as supports
      from w
      join weld_public.wps_pqrs l on l.tenant_id = w.tenant_id and l.wps_id = w.id
      join weld_public.pqrs p on p.tenant_id = l.tenant_id and p.id = l.pqr_id
  ), support as (
    select w.id,
           count(b.id) as pqrs,
           range_agg(b.supports) filter (where b.supports is not null) as thickness,
           array(select distinct x from unnest(array_agg(b.process)) as p (process),
                 unnest(string_to_array(p.process, '+')) as x order by 1) as processes,
           string_agg(distinct weld_private.p_joint_words(b.joint), ', ') as joints
      from w
      left join backing b on b.wps_id = w.id
     group by w.id
  )
  select w.id, 'pqr', format('%s is backed by no PQR (QW-200.2)', w.name)
    from w join support s on s.id = w.id
   where s.pqrs = 0
  union all
  select w.id, 'process',
         format('%s uses %s, and no PQR of it qualifies %s (QW-200.4)', w.name, w.process, x.process)
    from w
    join support s on s.id = w.id
    cross join lateral unnest(string_to_array(w.process, '+')) as x (process)
   where s.pqrs > 0 and not x.process = any(s.processes)
  union all
  select w.id, 'thickness',
         format('%s covers %s; its PQRs support %s (QW-451.1)', w.name,
                weld_private.range_words(w.thickness),
                coalesce((select string_agg(weld_private.range_words(r), ', ' order by lower(r))
                            from unnest(s.thickness) as r), 'no thickness'))
    from w join support s on s.id = w.id
   where s.pqrs > 0 and not coalesce(s.thickness @> w.thickness, false)
  union all
  select w.id, 'p_number',
         format('%s covers %s; its PQRs qualify %s (QW-424.1)', w.name,
                weld_private.p_joint_words(j.joint), s.joints)
    from w
    join support s on s.id = w.id
    cross join lateral (select string_to_array(x, '-') as joint, n
                          from unnest(w.joints) with ordinality as u (x, n)) j
   where s.pqrs > 0
     and not exists (
       select from backing b
        where b.wps_id = w.id
          and (b.joint = j.joint or exists (
                select from weld_public.p_number_rules r
                 where r.tenant_id = w.tenant_id and r.tested = b.joint and r.covers = j.joint)))
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.wps_problems.sql
--! Included functions/weld_private.heat_treatment_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Heat treatment and hardness by B31.3 Table 331.1.1 of the tenant's code edition
-- (tenant_settings.code_edition; the rows of weld_public.heat_treatment_rules of that edition,
-- and its exemptions, weld_public.heat_treatment_exemptions), for any number of welds; part of
-- the weld checks (weld_private.weld_problems):
--
--   PWHT_REQUIRED      PWHT is required and no PWHT record dated on or after the weld was last
--                      welded covers it. Required when its WPS is qualified with PWHT
--                      (wps.pwht_required, QW-407.1), or when a P-number of the joint asks for it
--                      at the weld's wall (over the row's wall_over_in; 0: at every thickness)
--                      and no exemption of the edition applies. Last welded: the weld's day, or
--                      its latest repair's (weld_private.weldings_of): a repair welded after the
--                      weld's PWHT owes a new one (B31.3 328.6: "preheating and heat treatment
--                      shall be as required for the original welding")
--   PWHT_OUT_OF_RANGE  the latest such record held outside the temperature range, or for less
--                      than the time its wall needs (the row's hold_* columns). For a joint of two
--                      P-numbers, the range is the higher of the two (B31.3 331.2.3(a))
--   HARDNESS_HIGH      a reading over the lowest hardness_max_hb of the joint's P-numbers, taken on
--                      or after the latest covering PWHT (a reading before it no longer tells)
--   HARDNESS_REQUIRED  the edition's row has a hardness limit (which asks a test: B31.3-2012
--                      331.1.7(a)) and the weld's covering PWHT has no reading on or after it:
--                      every locally treated weld (heating 'local', or not recorded), and at least
--                      10% of a furnace batch (heating 'furnace': each weld of a batch short of
--                      that is named)
--   DATA_MISSING       a fillet weld with no wall thickness whose P-number needs PWHT over some
--                      thickness: whether it does is unknown (a groove weld's missing wall is
--                      named by the other checks already)
--
-- An exemption (B31.3-2022 Table 331.1.3, B31.3-2012 331.1.3(b)) applies to a side of the joint
-- when a row of its P-number matches the weld's kind, wall, size and throat, every welding of the
-- weld had the preheat it asks (the row's, or Table 330.1.1's where table_preheat), and every WPS
-- it was welded to is qualified as-welded (pwht_required false: "no exemptions are permitted for
-- PWHTs required by the designer or the WPS"); what the row's `conditions` add is the WPS's to
-- meet. Unknown facts never exempt. A P-number with no row (P-No. 8, say) asks for nothing; an
-- unknown P-number is DATA_MISSING of the other checks. A record judged is judged whether PWHT was
-- required or not: it says the weld was treated, so it must have been treated as the table says.
create or replace function weld_private.heat_treatment_problems(welds weld_public.welds[])
  returns table (weld_id uuid, code text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with settings as (
    select coalesce(s.code_edition, 'B31.3-2022') as edition
      from (select) as one
      left join weld_public.tenant_settings s on s.tenant_id = weld_hidden.current_tenant_id()
  ), w as (
    select x.id, x.tenant_id, x.welded_on, x.wall_thickness, x.size, x.throat_in,
           weld_private.is_fillet(x.type) as fillet,
           case when weld_private.is_fillet(x.type) then 'fillet' else 'groove' end as kind,
           weld_private.p_joint(x.base_metal_1_p_number, x.base_metal_2_p_number) as joint,
           st.edition
      from unnest(welds) as x
      cross join settings st
     where x.tenant_id = weld_hidden.current_tenant_id()
  ), welding as (
    -- The weld's welding as a whole: when it was last welded (and by which repair), the least
    -- preheat of all of it (null when one is not recorded), and what its WPSs say of PWHT.
    select g.weld_id,
           max(g.welded_on) as last_welded_on,
           (array_agg(g.repair_cycle order by g.welded_on desc, g.repair_cycle desc))[1] as last_cycle,
           case when bool_and(g.preheat_f is not null) then min(g.preheat_f) end as preheat_f,
           coalesce(bool_and(p.pwht_required = false), false) as as_welded,
           bool_or(g.wps_id is null) as wps_unknown,
           bool_or(p.pwht_required is null) as pwht_unrecorded,
           (array_agg(p.wps_number || ' rev ' || p.revision order by g.repair_cycle)
              filter (where p.pwht_required))[1] as pwht_wps
      from weld_private.weldings_of(welds) g
      left join weld_public.wps p on p.tenant_id = weld_hidden.current_tenant_id() and p.id = g.wps_id
     group by g.weld_id
  ), sides as (
    -- The edition's row of each P-number of the joint, whether it asks for PWHT at this wall
    -- (null: the wall is unknown and the row has a threshold), and the exemption that lifts it.
    select w.id, r.*,
           case when r.wall_over_in is null then false
                when r.wall_over_in = 0 then true
                else w.wall_thickness > r.wall_over_in end as asks,
           e.exempt, e.not_exempt
      from w
      join weld_public.heat_treatment_rules r
        on r.tenant_id = w.tenant_id and r.edition = w.edition and r.p_number = any(w.joint)
      left join welding g on g.weld_id = w.id
      left join lateral (
        -- The exemption rows of the side, each with what keeps it from applying (null: it does).
        select bool_or(x.why is null) as exempt,
               (array_agg(x.clause || ': ' || x.why order by x.weld_kind desc) filter (where x.why is not null))[1]
                 as not_exempt
          from (select e.clause, e.weld_kind,
                       case when g.as_welded is not true
                              then case when g.wps_unknown then 'no WPS is recorded, so no exemption applies'
                                        when g.pwht_unrecorded then 'the WPS records no PWHT condition (pwhtRequired), so no exemption applies'
                                        else 'its WPS is qualified with PWHT' end
                            when e.wall_max_in is not null and (w.wall_thickness is null or w.wall_thickness > e.wall_max_in)
                              then format('applies to walls up to %s', weld_private.inches(e.wall_max_in))
                            when e.size_max is not null and w.size > e.size_max
                              then format('applies to NPS %s and smaller', trim_scale(e.size_max))
                            when e.throat_max_in is not null and w.throat_in is null
                              then 'no throat thickness is recorded'
                            when e.throat_max_in is not null and w.throat_in > e.throat_max_in
                              then format('applies to throats up to %s', weld_private.inches(e.throat_max_in))
                            when e.preheat_min_f is not null
                                 and (e.preheat_over_in is null or w.wall_thickness is null or w.wall_thickness > e.preheat_over_in)
                                 and coalesce(g.preheat_f < e.preheat_min_f, true)
                              then format('asks a preheat of %s °F%s, and %s', e.preheat_min_f,
                                          coalesce(' over ' || weld_private.inches(e.preheat_over_in), ''),
                                          coalesce(g.preheat_f || ' °F is recorded', 'the weld or a repair of it has none recorded'))
                            when e.table_preheat and coalesce(g.preheat_f < t.minimum_f, true)
                              then format('asks the preheat of Table 330.1.1 (%s °F), and %s', coalesce(t.minimum_f::text, '?'),
                                          coalesce(g.preheat_f || ' °F is recorded', 'the weld or a repair of it has none recorded'))
                       end as why
                  from weld_public.heat_treatment_exemptions e
                  left join lateral (
                    select p.minimum_f from weld_public.preheat_rules p
                     where p.tenant_id = e.tenant_id and p.edition = e.edition and p.p_number = e.p_number
                       and p.wall_from_in <= coalesce(w.wall_thickness, 0)
                     order by p.wall_from_in desc limit 1) t on true
                 where e.tenant_id = r.tenant_id and e.edition = r.edition and e.p_number = r.p_number
                   and e.weld_kind in ('any', w.kind)) x
      ) e on true
  ), judged as (
    select w.*, g.last_welded_on, g.last_cycle, g.pwht_wps,
           gr.p_number as range_p_number, gr.temperature_min_f, gr.temperature_max_f,
           -- The time at temperature the weld's wall needs.
           case when w.wall_thickness <= gr.hold_break_in
                then greatest(gr.hold_minutes_min, ceil(gr.hold_minutes_per_in * w.wall_thickness))
                else gr.hold_minutes_per_in * gr.hold_break_in
                     + ceil(gr.hold_minutes_beyond * (w.wall_thickness - gr.hold_break_in))
           end::integer as hold_needed,
           rq.p_number as required_by, rq.wall_over_in as required_over, rq.not_exempt,
           uk.p_number as unknown_for, uk.wall_over_in as unknown_over,
           h.p_number as hardness_p_number, h.hardness_max_hb,
           p.id as record_id, p.record_number, p.treated_on, p.holding_temperature_f, p.hold_minutes,
           p.heating, before.record_number as before_number, before.treated_on as before_on
      from w
      left join welding g on g.weld_id = w.id
      -- The side that asks for PWHT and is not exempt, and one whose wall is unknown.
      left join lateral (
        select s.p_number, s.wall_over_in, s.not_exempt from sides s
         where s.id = w.id and s.asks and not coalesce(s.exempt, false)
         order by s.p_number limit 1) rq on true
      left join lateral (
        select s.p_number, s.wall_over_in from sides s
         where s.id = w.id and s.asks is null order by s.p_number limit 1) uk on true
      -- The governing range: the higher of the joint's (B31.3 331.2.3(a)).
      left join lateral (
        select s.* from sides s
         where s.id = w.id and s.temperature_min_f is not null
         order by s.temperature_min_f desc, s.temperature_max_f desc, s.p_number
         limit 1) gr on true
      -- The lowest hardness limit of the joint.
      left join lateral (
        select s.p_number, s.hardness_max_hb from sides s
         where s.id = w.id and s.hardness_max_hb is not null
         order by s.hardness_max_hb, s.p_number
         limit 1) h on true
      -- The latest PWHT record covering the weld since it was last welded ...
      left join lateral (
        select r.id, r.record_number, r.treated_on, r.holding_temperature_f, r.hold_minutes, r.heating
          from weld_public.pwht_record_welds l
          join weld_public.pwht_records r on r.tenant_id = l.tenant_id and r.id = l.pwht_record_id
         where l.tenant_id = w.tenant_id and l.weld_id = w.id and r.treated_on >= g.last_welded_on
         order by r.treated_on desc, r.created_at desc, r.id
         limit 1) p on true
      -- ... and, when it was repaired after one, the latest before that repair.
      left join lateral (
        select r.record_number, r.treated_on
          from weld_public.pwht_record_welds l
          join weld_public.pwht_records r on r.tenant_id = l.tenant_id and r.id = l.pwht_record_id
         where l.tenant_id = w.tenant_id and l.weld_id = w.id and g.last_cycle > 0
           and r.treated_on >= w.welded_on and r.treated_on < g.last_welded_on
         order by r.treated_on desc, r.created_at desc, r.id
         limit 1) before on true
  ), tested as (
    -- The hardness tests each covering record asks: every weld of a local treatment; 10% of a
    -- furnace batch, rounded up.
    select j.id, j.record_id,
           exists (select from weld_public.hardness_readings x
                    where x.tenant_id = j.tenant_id and x.weld_id = j.id and x.measured_on >= j.treated_on) as has_reading,
           b.welds as batch_welds, b.tested as batch_tested
      from judged j
      left join lateral (
        select count(*) as welds,
               count(*) filter (where exists (
                 select from weld_public.hardness_readings x
                  where x.tenant_id = l.tenant_id and x.weld_id = l.weld_id and x.measured_on >= j.treated_on)) as tested
          from weld_public.pwht_record_welds l
         where l.tenant_id = j.tenant_id and l.pwht_record_id = j.record_id and j.heating = 'furnace') b on true
     where j.record_id is not null and j.hardness_max_hb is not null
  )
  select j.id, 'PWHT_REQUIRED',
         case when j.required_by is null
              then format('WPS %s is qualified with PWHT (QW-407.1): no PWHT record dated on or after %s covers it',
                          j.pwht_wps, j.last_welded_on)
              when j.before_number is not null
              then format('repair %s, welded on %s after PWHT record %s of %s, owes a new PWHT dated on or after that day (B31.3 328.6, Table 331.1.1; %s): %s to %s °F for at least %s min',
                          j.last_cycle, j.last_welded_on, j.before_number, j.before_on, j.edition,
                          j.temperature_min_f, j.temperature_max_f, coalesce(j.hold_needed::text, '?'))
              else format('%s at a wall of %s requires PWHT (P-No. %s over %s; B31.3 Table 331.1.1, %s): %s to %s °F for at least %s min; no PWHT record dated on or after %s covers it%s',
                          weld_private.p_joint_words(j.joint), weld_private.inches(j.wall_thickness), j.required_by,
                          weld_private.inches(j.required_over), j.edition, j.temperature_min_f, j.temperature_max_f,
                          coalesce(j.hold_needed::text, '?'), coalesce(j.last_welded_on::text, 'the day it is welded'),
                          coalesce('; not exempt (' || j.not_exempt || ')', ''))
         end
    from judged j
   where (j.required_by is not null or j.pwht_wps is not null) and j.record_number is null
  union all
  select j.id, 'PWHT_OUT_OF_RANGE', o.detail
    from judged j
    cross join lateral unnest(array_remove(array[
      case when j.holding_temperature_f < j.temperature_min_f or j.holding_temperature_f > j.temperature_max_f
           then format('PWHT record %s of %s held %s °F, outside the %s to %s °F of P-No. %s (B31.3 Table 331.1.1, %s)',
                       j.record_number, j.treated_on, j.holding_temperature_f, j.temperature_min_f,
                       j.temperature_max_f, j.range_p_number, j.edition) end,
      case when j.hold_minutes < j.hold_needed
           then format('PWHT record %s of %s held %s min at temperature, less than the %s min a wall of %s needs (B31.3 Table 331.1.1, %s)',
                       j.record_number, j.treated_on, j.hold_minutes, j.hold_needed,
                       weld_private.inches(j.wall_thickness), j.edition) end
    ], null)) as o (detail)
   where j.record_number is not null and j.range_p_number is not null
  union all
  select j.id, 'HARDNESS_HIGH',
         format('%s hardness of %s HB on %s is over the %s HB of P-No. %s (B31.3 Table 331.1.1, %s)',
                case r.location when 'haz' then 'heat affected zone' when 'base' then 'base metal' else 'weld metal' end,
                r.hardness_hb, r.measured_on, j.hardness_max_hb, j.hardness_p_number, j.edition)
    from judged j
    join weld_public.hardness_readings r on r.tenant_id = j.tenant_id and r.weld_id = j.id
   where r.hardness_hb > j.hardness_max_hb
     and r.measured_on >= coalesce(j.treated_on, r.measured_on)
  union all
  select j.id, 'HARDNESS_REQUIRED',
         case when j.heating = 'furnace'
              then format('PWHT record %s of %s, a furnace batch of %s welds, has %s hardness tested on or after it; at least %s are required (%s HB of P-No. %s; B31.3 331.1.7(a), %s)',
                          j.record_number, j.treated_on, t.batch_welds, t.batch_tested,
                          ceil(t.batch_welds * 0.1)::integer, j.hardness_max_hb, j.hardness_p_number, j.edition)
              else format('no hardness reading on or after PWHT record %s of %s (%s): every locally treated weld is tested against the %s HB of P-No. %s (B31.3 331.1.7(a), %s)',
                          j.record_number, j.treated_on,
                          coalesce(j.heating || ' heat treatment', 'heating not recorded, judged as local'),
                          j.hardness_max_hb, j.hardness_p_number, j.edition)
         end
    from judged j
    join tested t on t.id = j.id
   where not t.has_reading
     and (j.heating is distinct from 'furnace' or t.batch_tested < ceil(t.batch_welds * 0.1))
  union all
  select j.id, 'DATA_MISSING',
         format('no wall thickness is recorded: whether P-No. %s needs PWHT (over %s) is unknown',
                j.unknown_for, weld_private.inches(j.unknown_over))
    from judged j
   where j.fillet and j.unknown_for is not null and j.required_by is null
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.heat_treatment_problems.sql
--! Included functions/weld_private.preheat_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Preheat by B31.3 330 and Table 330.1.1 of the tenant's code edition (weld_public.preheat_rules),
-- for any number of welds; part of the weld checks (weld_private.weld_problems). Each welding of
-- a weld (the weld, and each repair re-welded since: weld_private.weldings_of) is judged on its
-- own, against the higher of
--   - the edition's required minimum for each P-number of the joint at the weld's nominal wall
--     (the row with the greatest wall_from_in not above it; for two P-numbers, the higher:
--     B31.3 330.1.3), and
--   - its WPS's minimum (wps.preheat_min_f):
--
--   PREHEAT_LOW   the recorded preheat is below that minimum
--   DATA_MISSING  no preheat is recorded where a minimum is required; or the wall is unknown and
--                 the P-number's minimum depends on it, and the preheat is below the higher one
--
-- A welding not yet done (no date welded) is not judged; a row the edition only recommends
-- (required false) is shown by the table, not judged.
create or replace function weld_private.preheat_problems(welds weld_public.welds[])
  returns table (weld_id uuid, code text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with settings as (
    select coalesce(s.code_edition, 'B31.3-2022') as edition
      from (select) as one
      left join weld_public.tenant_settings s on s.tenant_id = weld_hidden.current_tenant_id()
  ), w as (
    select x.id, x.tenant_id, x.wall_thickness,
           weld_private.p_joint(x.base_metal_1_p_number, x.base_metal_2_p_number) as joint, st.edition
      from unnest(welds) as x
      cross join settings st
     where x.tenant_id = weld_hidden.current_tenant_id()
  ), needs as (
    -- Each welding with the table's minimum at its wall (and the highest any wall could need,
    -- for a wall not recorded), and its WPS's.
    select g.*, w.edition, w.joint, w.wall_thickness,
           t.minimum_f as table_f, t.p_number as table_p, t.wall_from_in as table_from,
           hi.minimum_f as highest_f, p.preheat_min_f as wps_f, p.wps_number || ' rev ' || p.revision as wps_name
      from weld_private.weldings_of(welds) g
      join w on w.id = g.weld_id
      left join weld_public.wps p on p.tenant_id = w.tenant_id and p.id = g.wps_id
      left join lateral (
        select r.minimum_f, r.p_number, r.wall_from_in
          from unnest(w.joint) as j (p_number)
          cross join lateral (
            select r.* from weld_public.preheat_rules r
             where r.tenant_id = w.tenant_id and r.edition = w.edition and r.p_number = j.p_number
               and r.required and r.wall_from_in <= coalesce(w.wall_thickness, 0)
             order by r.wall_from_in desc limit 1) r
         order by r.minimum_f desc, r.p_number
         limit 1) t on true
      left join lateral (
        select max(r.minimum_f) as minimum_f
          from weld_public.preheat_rules r
         where r.tenant_id = w.tenant_id and r.edition = w.edition and r.p_number = any(w.joint) and r.required
           and w.wall_thickness is null) hi on true
     where g.welded_on is not null
  ), judged as (
    select n.*, greatest(n.table_f, n.wps_f) as needed_f,
           case when n.repair_cycle = 0 then '' else format('repair %s: ', n.repair_cycle) end as prefix
      from needs n
  )
  select j.weld_id, 'PREHEAT_LOW',
         j.prefix || case when j.wps_f is not null and j.wps_f > coalesce(j.table_f, -1)
           then format('a preheat of %s °F is below the %s °F WPS %s asks', j.preheat_f, j.wps_f, j.wps_name)
           else format('a preheat of %s °F is below the %s °F minimum for P-No. %s at a wall of %s (B31.3 Table 330.1.1, %s)',
                       j.preheat_f, j.table_f, j.table_p,
                       coalesce(weld_private.inches(j.wall_thickness), 'unknown'), j.edition) end
    from judged j
   where j.preheat_f < j.needed_f
  union all
  select j.weld_id, 'DATA_MISSING',
         j.prefix || format('no preheat is recorded; at least %s °F is required (%s)', j.needed_f,
                            concat_ws(', ',
                              case when j.table_f is not null
                                   then format('P-No. %s at a wall of %s, B31.3 Table 330.1.1, %s', j.table_p,
                                               coalesce(weld_private.inches(j.wall_thickness), 'unknown'), j.edition) end,
                              case when j.wps_f is not null then format('WPS %s', j.wps_name) end))
    from judged j
   where j.preheat_f is null and j.needed_f is not null
  union all
  select j.weld_id, 'DATA_MISSING',
         j.prefix || format('no wall thickness is recorded: the preheat the joint needs may be up to %s °F (B31.3 Table 330.1.1, %s), and %s °F is recorded',
                            j.highest_f, j.edition, j.preheat_f)
    from judged j
   where j.wall_thickness is null and j.preheat_f is not null and j.preheat_f < j.highest_f
     and j.preheat_f >= coalesce(j.needed_f, 0)
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.preheat_problems.sql
--! Included functions/weld_private.weld_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The weld checks. One set-based function judges any number of welds (a weld's checks, its
-- write, a package's readiness), so the rules are written once:
--
--   DATA_MISSING           one row per missing fact: welder, WPS, date welded, the P-number of
--                          either base metal, the WPS's P-numbers; for a groove weld also its
--                          wall thickness and a size that is no standard NPS (its OD unknown);
--                          for a repair re-welded, its date welded and its welder
--   WPS_NOT_APPROVED       the WPS is a draft (a superseded WPS was approved when it was current)
--   WPS_RANGE              a groove weld's OD or wall thickness outside the WPS's ranges
--   WPS_PNUMBER            the weld's base metals are not a joint its WPS covers: the one its
--                          P-numbers name, or one of its additional joints (QW-403.11, QW-424.1)
--   WPS_RANGE_UNSUPPORTED  its WPS is not qualified by its PQRs (above)
--   WELDER_NOT_QUALIFIED   for a process of the WPS, no qualification of the welder in force for
--                          it on the date welded (not yet valid, revoked, expired, lapsed) that
--                          covers the weld: a fillet qualification covers fillet welds only; a
--                          groove one covers a groove weld within its diameter and thickness and
--                          every fillet weld. Judged when welder, WPS and date are known; the
--                          detail names at most three qualifications per process.
--   REEXAMINATION_OPEN     a repair's re-examination not yet met (section 8)
--   PWHT_REQUIRED, PWHT_OUT_OF_RANGE, HARDNESS_HIGH, HARDNESS_REQUIRED
--                          heat treatment and hardness by B31.3 Table 331.1.1
--                          (weld_private.heat_treatment_problems)
--   PREHEAT_LOW            preheat by B31.3 Table 330.1.1 and the WPS
--                          (weld_private.preheat_problems)
--   FILLER_NOT_COVERED     a filler outside the WPS's F-numbers or processes (QW-404.4;
--                          weld_private.filler_problems)
--
-- Each repair re-welded is welding of its own (weld_private.weldings_of): its welder is judged
-- for its WPS (its repair WPS, else the weld's) on its day, and a repair WPS other than the
-- weld's is judged like the weld's; its problems are named "repair N: ...".
--
-- Positions are not judged: a weld records none (a qualification's positions are shown).
-- `include_welders` false leaves WELDER_NOT_QUALIFIED out (a WPS change cannot change it).
create or replace function weld_private.weld_problems(
  welds weld_public.welds[], pending boolean default false, include_welders boolean default true
) returns table (weld_id uuid, code text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select x.*, weld_private.outside_diameter(x.size) as od, weld_private.is_fillet(x.type) as fillet,
           weld_private.p_joint(x.base_metal_1_p_number, x.base_metal_2_p_number) as joint
      from unnest(welds) as x
     where x.tenant_id = weld_hidden.current_tenant_id() -- rows are the caller's to give: only its tenant's
  ), g as (
    -- Each welding of each weld: the weld (cycle 0) and its repairs, with the WPS it was done to.
    select w.id, w.tenant_id, w.od, w.fillet, w.joint, w.size, w.wall_thickness, x.repair_cycle,
           x.welded_on, x.day_known, x.welder_id, x.wps_id,
           case when x.repair_cycle = 0 then '' else format('repair %s: ', x.repair_cycle) end as prefix,
           p.wps_number, p.revision as wps_revision, p.state as wps_state, p.process as wps_process,
           p.diameter_min_in as wps_d_min, p.diameter_max_in as wps_d_max,
           p.thickness_min_in as wps_t_min, p.thickness_max_in as wps_t_max, p.p_numbers as wps_p_numbers,
           weld_private.wps_joints(p.p_numbers, p.additional_joints) as wps_joints
      from w
      join weld_private.weldings_of(welds) x on x.weld_id = w.id
      left join weld_public.wps p on p.tenant_id = w.tenant_id and p.id = x.wps_id
  ), wp as (
    -- The WPSs judged: the weld's own, and a repair's where it is another.
    select g.* from g
     where g.repair_cycle = 0
        or g.wps_id is distinct from (select o.wps_id from g o where o.id = g.id and o.repair_cycle = 0)
  ), facts as (
    select * from weld_private.qualification_facts(
      case when include_welders
           then array(select distinct g.welder_id from g where g.welder_id is not null) else '{}' end,
      case when pending then welds else '{}' end)
  ), needed as (
    -- Each process each judged welding needs a qualification for.
    select g.id, g.repair_cycle, g.welded_on, g.welder_id, g.fillet, g.od, g.wall_thickness, x.process
      from g
      cross join lateral unnest(string_to_array(g.wps_process, '+')) as x (process)
     where include_welders and g.welder_id is not null and g.wps_id is not null
       and g.welded_on is not null
  ), judged as (
    -- Each qualification of the welder for that process, with what keeps it from covering.
    select n.id, n.repair_cycle, n.process, f.label, f.qualified_on,
           array_remove(array[
             case when n.welded_on < f.qualified_on then 'not yet valid on ' || n.welded_on end,
             case when n.welded_on >= f.revoked_on then 'revoked on ' || f.revoked_on || ' (QW-322.1(b))' end,
             case when n.welded_on > f.expires_on then 'expired on ' || f.expires_on end,
             case when n.welded_on >= f.qualified_on and n.welded_on <= coalesce(f.expires_on, n.welded_on)
                   and n.welded_on > f.continuity_until
                  then 'lapsed for ' || n.process || ' on ' || (f.continuity_until + 1) || ' (QW-322.1(a))' end,
             case when f.joint = 'fillet' and not n.fillet then 'covers fillet welds only (QW-303.2)' end,
             case when n.fillet or f.joint = 'fillet' then null
                  when not f.diameter_known then 'diameter range unknown (no range, coupon or PQR diameter recorded)'
                  when n.od < f.diameter_min or n.od > f.diameter_max
                  then 'covers ' || weld_private.diameter_words(true, f.diameter_min, f.diameter_max)
                       || ', not OD ' || weld_private.inches(n.od) || ' (QW-452.3)' end,
             case when n.fillet or f.joint = 'fillet' then null
                  when not f.thickness_known then 'thickness range unknown (no range, coupon or PQR thickness recorded)'
                  when n.wall_thickness > f.thickness_max
                  then 'covers ' || weld_private.thickness_words(true, f.thickness_max) || ', not '
                       || weld_private.inches(n.wall_thickness) || ' (QW-452.1(b))' end
           ], null) as failures
      from needed n
      join facts f on f.welder_id = n.welder_id and f.process = n.process
  ), uncovered as (
    -- The processes of judged weldings that no qualification covers.
    select n.id, n.repair_cycle, n.process
      from needed n
      left join judged j on j.id = n.id and j.repair_cycle = n.repair_cycle and j.process = n.process
                        and cardinality(j.failures) = 0
     group by n.id, n.repair_cycle, n.process
    having count(j.id) = 0
  ), why as (
    -- Why, per process: the three latest qualifications and how many more.
    select u.id, u.repair_cycle,
           string_agg('for ' || u.process || ', ' || coalesce(r.why, 'none is recorded'), '; '
                      order by u.process) as why
      from uncovered u
      left join lateral (
        select string_agg(x.label || ' ' || array_to_string(x.failures, ', '), '; '
                          order by x.qualified_on desc, x.label) filter (where x.n <= 3)
               || case when count(*) > 3 then format(' (and %s more)', count(*) - 3) else '' end as why
          from (select j.*, row_number() over (order by j.qualified_on desc, j.label) as n
                  from judged j
                 where j.id = u.id and j.repair_cycle = u.repair_cycle and j.process = u.process) x) r on true
     group by u.id, u.repair_cycle
  )
  -- (Each sentence below is built only where its case holds: CASE evaluates lazily.)
  select w.id, 'DATA_MISSING', m.detail
    from w
    left join weld_public.wps p on p.tenant_id = w.tenant_id and p.id = w.wps_id
    cross join lateral unnest(array_remove(array[
      case when w.welder_id is null then 'no welder is recorded' end,
      case when w.wps_id is null then 'no WPS is recorded' end,
      case when w.welded_on is null then 'no date welded is recorded' end,
      case when w.wall_thickness is null and not w.fillet then 'no wall thickness is recorded' end,
      case when w.od is null and not w.fillet
           then 'size ' || trim_scale(w.size) || ' is no standard NPS: its outside diameter is unknown' end,
      case when w.base_metal_1_p_number is null then 'no P-number is recorded for base metal 1' end,
      case when w.base_metal_2_p_number is null then 'no P-number is recorded for base metal 2' end,
      case when w.wps_id is not null and p.p_numbers is null
           then format('WPS %s rev %s records no P-numbers', p.wps_number, p.revision) end
    ], null)) as m (detail)
  union all
  select g.id, 'DATA_MISSING', g.prefix || m.detail
    from g
    cross join lateral unnest(array_remove(array[
      case when not g.day_known then 'no date welded is recorded (the day it left REPAIR, '
                                     || g.welded_on || ', is taken meanwhile)' end,
      case when g.welder_id is null then 'no welder is recorded' end
    ], null)) as m (detail)
   where g.repair_cycle > 0
  union all
  select wp.id, 'WPS_NOT_APPROVED',
         wp.prefix || format('WPS %s rev %s is a %s, not approved', wp.wps_number, wp.wps_revision, wp.wps_state)
    from wp
   where wp.wps_state = 'draft'
  union all
  select wp.id, 'WPS_RANGE', wp.prefix || r.detail
    from wp
    cross join lateral unnest(array_remove(array[
      case when wp.od < wp.wps_d_min or wp.od > wp.wps_d_max
           then format('OD %s (NPS %s) is outside WPS %s''s diameters, %s to %s', weld_private.inches(wp.od),
                       trim_scale(wp.size), wp.wps_number, weld_private.inches(wp.wps_d_min),
                       coalesce(weld_private.inches(wp.wps_d_max), 'any')) end,
      case when wp.wall_thickness < wp.wps_t_min or wp.wall_thickness > wp.wps_t_max
           then format('wall thickness %s is outside WPS %s''s thicknesses, %s to %s',
                       weld_private.inches(wp.wall_thickness), wp.wps_number,
                       weld_private.inches(wp.wps_t_min), coalesce(weld_private.inches(wp.wps_t_max), 'any')) end
    ], null)) as r (detail)
   where wp.wps_id is not null and not wp.fillet
  union all
  select wp.id, 'WPS_PNUMBER',
         wp.prefix || format('%s is not a joint WPS %s rev %s covers (%s; QW-403.11)', weld_private.p_joint_words(wp.joint),
                             wp.wps_number, wp.wps_revision,
                             (select string_agg(weld_private.p_joint_words(string_to_array(j.joint, '-')), ', ' order by j.n)
                                from unnest(wp.wps_joints) with ordinality as j (joint, n)))
    from wp
   where wp.joint is not null and cardinality(wp.wps_joints) > 0
     and not array_to_string(wp.joint, '-') = any(wp.wps_joints)
  union all
  select wp.id, 'WPS_RANGE_UNSUPPORTED', wp.prefix || p.detail
    from wp
    join weld_private.wps_problems(array(select distinct wp.wps_id from wp where wp.wps_id is not null)) p
      on p.wps_id = wp.wps_id
   where not (wp.fillet and p.aspect = 'thickness')
  union all
  select g.id, 'WELDER_NOT_QUALIFIED',
         g.prefix || format('welder %s holds no qualification in force on %s that covers this weld: %s',
                            coalesce(wr.stamp, '?'), g.welded_on, y.why)
    from why y
    join g on g.id = y.id and g.repair_cycle = y.repair_cycle
    left join weld_public.welders wr on wr.tenant_id = g.tenant_id and wr.id = g.welder_id
  union all
  select r.weld_id, 'REEXAMINATION_OPEN',
         format('repair %s, welded on %s, owes a new %s examination (%s) dated on or after that day (B31.3 341.3.3); %s rejected it',
                r.repair_cycle, r.rewelded_on, r.method, weld_private.methods_words(r.methods), r.cause)
    from weld_private.reexaminations_of(array(select w.id from w)) r
   where r.met_by is null
  union all
  select h.weld_id, h.code, h.detail
    from weld_private.heat_treatment_problems(welds) h
  union all
  select h.weld_id, h.code, h.detail
    from weld_private.preheat_problems(welds) h
  union all
  select f.weld_id, f.code, f.detail
    from weld_private.filler_problems(welds) f
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.weld_problems.sql
--! Included functions/weld_private.tg__approved_wps_qualified.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- An approved WPS is a qualified one (WD013). Checked at commit, when the WPS and its PQR list
-- are both written (REST writes the row, then its pqrIds): approving a WPS, changing an approved
-- one's ranges or P-numbers, taking a PQR off it, or changing a PQR that backs one. Requests
-- only: the seed generator and a DBA are not held to it (their WPSs show WPS_RANGE_UNSUPPORTED).
create or replace function weld_private.tg__approved_wps_qualified() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid;
  wps_ids uuid[];
  bad record;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  case tg_table_name
    when 'wps' then
      tenant := new.tenant_id;
      wps_ids := array[new.id];
    when 'wps_pqrs' then
      tenant := old.tenant_id;
      wps_ids := array[old.wps_id];
    else -- pqrs
      tenant := new.tenant_id;
      wps_ids := array(select l.wps_id from weld_public.wps_pqrs l
                        where l.tenant_id = new.tenant_id and l.pqr_id = new.id);
  end case;
  select w.id, w.wps_number, w.revision,
         jsonb_agg(jsonb_build_object('code', 'WPS_RANGE_UNSUPPORTED', 'detail', p.detail)
                   order by p.aspect, p.detail) as checks
    into bad
    from weld_public.wps w
    join weld_private.wps_problems(wps_ids) p on p.wps_id = w.id
   where w.tenant_id = tenant and w.id = any(wps_ids) and w.state = 'approved'
   group by w.id, w.wps_number, w.revision
   order by w.wps_number, w.revision
   limit 1;
  if found then
    raise exception 'WPS % rev % is approved but not qualified by its PQRs: %', bad.wps_number, bad.revision,
      (bad.checks -> 0 ->> 'detail')
      -- wpsId names the WPS refused, unless the refusal is of its creation: then nothing exists.
      using errcode = 'WD013', detail = jsonb_strip_nulls(jsonb_build_object(
        'wpsId', case when not (tg_table_name = 'wps' and tg_op = 'INSERT') then bad.id end,
        'checks', bad.checks))::text;
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

drop trigger if exists _800_approved_wps_qualified on weld_public.pqrs;
create constraint trigger _800_approved_wps_qualified
  after update of process, p_numbers, thickness_tested_in on weld_public.pqrs
  deferrable initially deferred
  for each row execute function weld_private.tg__approved_wps_qualified();
drop trigger if exists _800_approved_wps_qualified on weld_public.wps;
create constraint trigger _800_approved_wps_qualified
  after insert or update of state, thickness_min_in, thickness_max_in, p_numbers, additional_joints
  on weld_public.wps
  deferrable initially deferred
  for each row when (new.state = 'approved')
  execute function weld_private.tg__approved_wps_qualified();
drop trigger if exists _800_approved_wps_qualified on weld_public.wps_pqrs;
create constraint trigger _800_approved_wps_qualified after delete on weld_public.wps_pqrs
  deferrable initially deferred
  for each row execute function weld_private.tg__approved_wps_qualified();
--! EndIncluded functions/weld_private.tg__approved_wps_qualified.sql
--! Included functions/weld_private.tg__judged_on.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The guards, once per statement, for requests only.
create or replace function weld_private.tg__judged_on() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  lines text[] := '{}';
  wps_ids uuid[] := '{}';
  welder_ids uuid[] := '{}';
  iso_ids uuid[] := '{}';
  change text;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  case tg_table_name
    when 'isos' then
      change := 'this change of an ISO';
      lines := array(select n.line_number from new_rows n join old_rows o on o.id = n.id
                      where (n.fluid_service, n.rt_percent, n.line_number)
                            is distinct from (o.fluid_service, o.rt_percent, o.line_number)
                     union
                     select o.line_number from new_rows n join old_rows o on o.id = n.id
                      where (n.fluid_service, n.rt_percent, n.line_number)
                            is distinct from (o.fluid_service, o.rt_percent, o.line_number));
    when 'wps' then
      change := 'this change of a WPS';
      wps_ids := array(select n.id from new_rows n join old_rows o on o.id = n.id
                        where (n.state, n.thickness_min_in, n.thickness_max_in, n.diameter_min_in,
                               n.diameter_max_in, n.p_numbers, n.additional_joints, n.f_numbers,
                               n.preheat_min_f, n.pwht_required)
                              is distinct from (o.state, o.thickness_min_in, o.thickness_max_in,
                                                o.diameter_min_in, o.diameter_max_in, o.p_numbers,
                                                o.additional_joints, o.f_numbers, o.preheat_min_f,
                                                o.pwht_required));
    when 'wps_pqrs' then
      change := 'this change of a WPS''s PQRs';
      if tg_op = 'INSERT' then
        wps_ids := array(select distinct n.wps_id from new_rows n);
      else
        wps_ids := array(select distinct o.wps_id from old_rows o);
      end if;
    when 'pqrs' then
      change := 'this change of a PQR';
      wps_ids := array(select distinct l.wps_id
                         from new_rows n
                         join weld_public.wps_pqrs l on l.tenant_id = n.tenant_id and l.pqr_id = n.id);
      welder_ids := array(select distinct q.welder_id
                            from new_rows n
                            join weld_public.welder_qualifications q
                              on q.tenant_id = n.tenant_id and q.pqr_id = n.id);
    when 'welder_qualifications' then
      change := case tg_op when 'DELETE' then 'deleting a qualification' else 'this change of a qualification' end;
      if tg_op = 'DELETE' then
        welder_ids := array(select distinct o.welder_id from old_rows o);
      else
        welder_ids := array(select n.welder_id from new_rows n union select o.welder_id from old_rows o);
      end if;
    when 'filler_lots' then
      -- A lot's F-number is what its welds' fillers are judged by: the ISOs of those welds.
      change := 'this change of a filler lot';
      iso_ids := array(select distinct w.iso_id
                         from new_rows n
                         join old_rows o on o.id = n.id
                         join weld_public.weld_fillers f on f.tenant_id = n.tenant_id and f.filler_lot_id = n.id
                         join weld_public.welds w on w.tenant_id = f.tenant_id and w.id = f.weld_id
                        where n.f_number is distinct from o.f_number);
  end case;
  if cardinality(lines) + cardinality(wps_ids) + cardinality(welder_ids) + cardinality(iso_ids) = 0 then
    return null;
  end if;
  perform weld_private.hold_released_packages(
    weld_private.packages_judged_on(lines, wps_ids, welder_ids)
    || array(select p.id
               from weld_public.test_packages p
              where p.tenant_id = weld_hidden.current_tenant_id() and p.state <> 'open'
                and p.id = any(weld_private.packages_reading('{}', iso_ids, '{}', '{}'))),
    change);
  if tg_table_name in ('wps', 'wps_pqrs', 'pqrs', 'welder_qualifications') then
    perform weld_private.refuse_failing_welds(wps_ids, welder_ids, change);
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _700_judged_on_delete after delete on weld_public.welder_qualifications
  referencing old table as old_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_delete after delete on weld_public.wps_pqrs
  referencing old table as old_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.isos
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.pqrs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.welder_qualifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.wps
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.filler_lots
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
--! EndIncluded functions/weld_private.tg__judged_on.sql
--! Included functions/weld_private.tg_welds__package_open.sql
create or replace function weld_private.tg_welds__package_open() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  weld_ids uuid[];
  iso_ids uuid[];
  package record;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  -- The welds whose data the statement wrote, and their ISOs before and after. (Each branch names
  -- only the transition tables its event has. EXCEPT, not a join of the two: the planner knows
  -- nothing of transition tables, and a nested loop over 100,000 rows of each never ends.)
  if tg_op = 'INSERT' then
    weld_ids := '{}'; -- a weld just made is in no package's list yet
    select array_agg(distinct n.iso_id) into iso_ids from new_rows n;
  else
    with data_after as (
      select n.id, n.iso_id, n.weld_number, n.type, n.size, n.schedule, n.wall_thickness,
             n.material, n.welder_id, n.wps_id, n.welded_on, n.base_metal_1_p_number,
             n.base_metal_2_p_number, n.component_1_id, n.component_2_id, n.preheat_f, n.throat_in
        from new_rows n
    ), data_before as (
      select o.id, o.iso_id, o.weld_number, o.type, o.size, o.schedule, o.wall_thickness,
             o.material, o.welder_id, o.wps_id, o.welded_on, o.base_metal_1_p_number,
             o.base_metal_2_p_number, o.component_1_id, o.component_2_id, o.preheat_f, o.throat_in
        from old_rows o
    ), changed_after as (
      select * from data_after except select * from data_before
    ), changed_before as (
      select * from data_before except select * from data_after
    )
    select array(select c.id from changed_after c),
           array(select c.iso_id from changed_after c union select c.iso_id from changed_before c)
      into weld_ids, iso_ids;
  end if;
  if coalesce(cardinality(iso_ids), 0) = 0 then
    return null;
  end if;
  for package in
    select p.package_number, p.state
      from weld_public.test_packages p
     where p.tenant_id = weld_hidden.current_tenant_id()
       and (p.id in (select l.test_package_id from weld_public.test_package_isos l
                      where l.tenant_id = p.tenant_id and l.iso_id in (select unnest(iso_ids)))
            or p.id in (select l.test_package_id from weld_public.test_package_welds l
                         where l.tenant_id = p.tenant_id
                           and l.weld_id in (select unnest(weld_ids))))
     order by p.id
       for no key update
  loop
    if package.state <> 'open' then
      raise exception 'test package % is %; the data of its welds changes only while it is open',
        package.package_number, package.state
        using errcode = 'WD008';
    end if;
  end loop;
  return null;
end
$$;

create or replace trigger _100_package_open_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg_welds__package_open();
create or replace trigger _100_package_open_update after update on weld_public.welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg_welds__package_open();
--! EndIncluded functions/weld_private.tg_welds__package_open.sql
--! Included functions/weld_private.qualification_facts.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.qualification_facts(
  welder_ids uuid[], pending weld_public.welds[] default '{}'
)
  returns table (
    qualification_id uuid, welder_id uuid, process text, processes text[], wps_id uuid,
    label text, joint text, qualified_on date, expires_on date, revoked_on date,
    revocation_reason text, last_continuity_on date, continuity_until date, lapse_after date,
    positions text[], diameter_known boolean, diameter_min numeric, diameter_max numeric,
    thickness_known boolean, thickness_max numeric
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with settings as (
    select coalesce((select s.continuity_months from weld_public.tenant_settings s
                      where s.tenant_id = weld_hidden.current_tenant_id()), 6) as months
  ), q as (
    select q.*, string_to_array(coalesce(q.process, qw.process), '+') as procs,
           coalesce(q.coupon_diameter_in, p.diameter_tested_in) as coupon_d,
           coalesce(q.coupon_thickness_in, p.thickness_tested_in) as coupon_t,
           coalesce('WPS ' || qw.wps_number || ' rev ' || qw.revision, q.process)
             || ' qualified ' || q.qualified_on as label
      from weld_public.welder_qualifications q
      left join weld_public.wps qw on qw.tenant_id = q.tenant_id and qw.id = q.wps_id
      left join weld_public.pqrs p on p.tenant_id = q.tenant_id and p.id = q.pqr_id
     where q.tenant_id = weld_hidden.current_tenant_id() and q.welder_id = any(welder_ids)
  ), qp as (
    select q.*, x.process as one from q cross join lateral unnest(q.procs) as x (process)
  ), days as (
    -- The days each welder used each process, once each: the welds on record (an index-only scan
    -- of welds_welder_wps_day_idx, the pending ones left out; a VOIDED weld is no use, as in the
    -- continuity log), the continuity log, and the repairs they welded.
    select distinct d.welder_id, x.process, d.day
      from (select distinct w.welder_id, w.wps_id, w.welded_on as day
              from weld_public.welds w
             where w.tenant_id = weld_hidden.current_tenant_id() and w.welder_id = any(welder_ids)
               and w.wps_id is not null and w.welded_on is not null and w.status <> 'VOIDED'
               and not w.id = any(array(select p.id from unnest(pending) p))) d
      join weld_public.wps ww on ww.tenant_id = weld_hidden.current_tenant_id() and ww.id = d.wps_id
      cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
    union
    select c.welder_id, c.process, c.used_on
      from weld_public.welder_continuity c
     where c.tenant_id = weld_hidden.current_tenant_id() and c.welder_id = any(welder_ids)
    union
    -- The repairs each welder welded, on the day recorded (weld_public.welders_continuity).
    select p.welder_id, x.process, p.welded_on
      from weld_public.weld_repairs p
      join weld_public.welds w on w.tenant_id = p.tenant_id and w.id = p.weld_id
      join weld_public.wps ww on ww.tenant_id = p.tenant_id and ww.id = coalesce(p.wps_id, w.wps_id)
      cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
     where p.tenant_id = weld_hidden.current_tenant_id() and p.welder_id = any(welder_ids)
       and p.welded_on is not null and p.rewelded_at is not null and w.status <> 'VOIDED'
  ), islands as (
    -- Runs of those days without a gap longer than the continuity period, per welder and process:
    -- a welder's thousand welds become a few intervals.
    select r.welder_id, r.process, min(r.day) as start_on, max(r.day) as end_on
      from (select g.*, count(*) filter (where g.day > (g.previous + make_interval(months => s.months))::date)
                          over (partition by g.welder_id, g.process order by g.day) as run
              from (select d.*, lag(d.day) over (partition by d.welder_id, d.process order by d.day) as previous
                      from days d) g
              cross join settings s) r
     group by r.welder_id, r.process, r.run
     union all
    -- The pending welds, each a day of its own.
    select p.welder_id, x.process, p.welded_on, p.welded_on
      from unnest(pending) p
      join weld_public.wps ww on ww.tenant_id = p.tenant_id and ww.id = p.wps_id
      cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
     where p.welder_id = any(welder_ids) and p.welded_on is not null
  ), uses as (
    select qp.id, qp.one, qp.qualified_on as start_on, qp.qualified_on as end_on from qp
    union all
    select qp.id, qp.one, qp.last_continuity_on, qp.last_continuity_on
      from qp where qp.last_continuity_on is not null
    union all
    select qp.id, qp.one, greatest(i.start_on, qp.qualified_on), i.end_on
      from qp
      join islands i on i.welder_id = qp.welder_id and i.process = qp.one and i.end_on >= qp.qualified_on
  ), chained as (
    -- In order of start, how far the uses so far reach, and where the next one starts.
    select u.id, u.one,
           max(u.end_on) over (partition by u.id, u.one order by u.start_on, u.end_on rows unbounded preceding) as reach,
           lead(u.start_on) over (partition by u.id, u.one order by u.start_on, u.end_on) as next_start
      from uses u
  ), breaks as (
    -- The first gap longer than the continuity period (reach only grows, so the least reach).
    select c.id, c.one, min(c.reach) as lapse_after
      from chained c, settings s
     where c.next_start is null or c.next_start > (c.reach + make_interval(months => s.months))::date
     group by c.id, c.one
  )
  select qp.id, qp.welder_id, qp.one, qp.procs, qp.wps_id, qp.label, qp.joint, qp.qualified_on,
         qp.expires_on, qp.revoked_on, qp.revocation_reason, qp.last_continuity_on,
         (b.lapse_after + make_interval(months => s.months))::date, b.lapse_after, qp.positions,
         qp.diameter_min_in is not null or (qp.coupon_d is not null and dr.min_in is not null),
         coalesce(qp.diameter_min_in, dr.min_in),
         coalesce(qp.diameter_max_in, dr.max_factor * qp.coupon_d),
         qp.thickness_max_in is not null or (qp.coupon_t is not null and tr.found),
         coalesce(qp.thickness_max_in, tr.max_factor * qp.coupon_t)
    from qp
    cross join settings s
    join breaks b on b.id = qp.id and b.one = qp.one
    left join lateral (
      -- The most generous QW-452.3 row for the coupon: the smallest diameter it qualifies.
      select coalesce(r.min_in, qp.coupon_d) as min_in, r.max_factor
        from weld_public.qualification_range_rules r
       where r.tenant_id = qp.tenant_id and r.dimension = 'diameter' and r.coupon @> qp.coupon_d
         and (qp.three_layers or not r.three_layers)
       order by coalesce(r.min_in, qp.coupon_d), r.max_factor desc nulls first
       limit 1) dr on true
    left join lateral (
      -- The most generous QW-452.1(b) row: no limit first, then the largest factor.
      select true as found, r.max_factor
        from weld_public.qualification_range_rules r
       where r.tenant_id = qp.tenant_id and r.dimension = 'thickness' and r.coupon @> qp.coupon_t
         and (qp.three_layers or not r.three_layers)
       order by r.max_factor desc nulls first
       limit 1) tr on true
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.qualification_facts.sql
--! Included functions/weld_public.welders_qualification_status.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.welders_qualification_status(
  welder weld_public.welders, on_date date default current_date
) returns setof weld_public.qualification_status
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select f.qualification_id, f.process, f.wps_id, j.state, f.qualified_on, f.expires_on,
         j.last_used_on, f.continuity_until,
         array[case j.state
           when 'not_yet_valid' then format('not yet valid on %s: qualified on %s', on_date, f.qualified_on)
           when 'revoked' then format('revoked on %s: %s (QW-322.1(b))', f.revoked_on, f.revocation_reason)
           when 'expired' then format('expired on %s', f.expires_on)
           when 'lapsed' then format(
             'lapsed for %s on %s: no %s use recorded for more than %s months after %s (QW-322.1(a))',
             f.process, f.continuity_until + 1, f.process, s.months, f.lapse_after)
           else format('valid for %s on %s: qualified on %s, %s, in force by continuity until %s (QW-322.1(a))',
             f.process, on_date, f.qualified_on,
             coalesce('expires on ' || f.expires_on, 'no expiry date'), f.continuity_until)
         end,
         case when f.joint = 'fillet'
              then 'covers ' || f.process || ' fillet welds only, of every size and thickness (QW-303.2)'
              else 'covers ' || f.process || ' groove welds of '
                   || weld_private.diameter_words(f.diameter_known, f.diameter_min, f.diameter_max) || ', '
                   || weld_private.thickness_words(f.thickness_known, f.thickness_max)
                   || ', and fillet welds of every size (QW-303.1)' end
         || coalesce(', positions ' || nullif(array_to_string(f.positions, ' '), ''), '')],
         f.revoked_on
    from weld_private.qualification_facts(array[welder.id]) f
    cross join lateral (
      select coalesce((select t.continuity_months from weld_public.tenant_settings t
                        where t.tenant_id = welder.tenant_id), 6) as months
    ) s
    cross join lateral (
      select case
               when on_date < f.qualified_on then 'not_yet_valid'
               when on_date >= f.revoked_on then 'revoked'
               when on_date > f.expires_on then 'expired'
               when on_date > f.continuity_until then 'lapsed'
               else 'valid'
             end as state,
             (select max(u.used_on) from (
                select f.last_continuity_on as used_on
                union all
                select c.used_on from weld_public.welder_continuity c
                 where c.tenant_id = welder.tenant_id and c.welder_id = welder.id and c.process = f.process
                union all
                select w.welded_on
                  from weld_public.welds w
                  join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = w.wps_id
                 where w.tenant_id = welder.tenant_id and w.welder_id = welder.id
                   and w.welded_on between f.qualified_on and on_date and w.status <> 'VOIDED'
                   and f.process = any(string_to_array(ww.process, '+'))
                union all
                select p.welded_on
                  from weld_public.weld_repairs p
                  join weld_public.welds w on w.tenant_id = p.tenant_id and w.id = p.weld_id
                  join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = coalesce(p.wps_id, w.wps_id)
                 where p.tenant_id = welder.tenant_id and p.welder_id = welder.id and p.rewelded_at is not null
                   and p.welded_on between f.qualified_on and on_date and w.status <> 'VOIDED'
                   and f.process = any(string_to_array(ww.process, '+'))) u
               where u.used_on between f.qualified_on and on_date) as last_used_on
    ) j
   order by f.qualified_on, f.qualification_id, f.process
$$;

comment on function weld_public.welders_qualification_status(weld_public.welders, date) is
  E'Each of the welder''s qualifications, per process, on a date (today by default): valid, expired, lapsed (QW-322.1(a): the process not used for more than the tenant''s continuity months, counted from the welds on record and the continuity log), revoked (QW-322.1(b)) or not_yet_valid, with the reasons and what it covers.';

grant execute on function weld_public.welders_qualification_status(weld_public.welders, date) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.welders_qualification_status.sql
--! Included functions/weld_public.welders_continuity.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.welders_continuity(welder weld_public.welders)
  returns setof weld_public.continuity_use
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select u.*
    from (
      select c.used_on, c.process, 'document' as source, c.reference, null::uuid as weld_id,
             c.id as continuity_id, c.recorded_by
        from weld_public.welder_continuity c
       where c.tenant_id = welder.tenant_id and c.welder_id = welder.id
      union all
      select w.welded_on, x.process, 'weld', format('weld %s on ISO %s, WPS %s rev %s', w.weld_number,
             i.iso_number, ww.wps_number, ww.revision), w.id, null, null
        from weld_public.welds w
        join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
        join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = w.wps_id
        cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
       where w.tenant_id = welder.tenant_id and w.welder_id = welder.id and w.welded_on is not null
         and w.status <> 'VOIDED'
      union all
      -- A repair is welding of the process of its WPS (its own, else the weld's), on the day it
      -- was welded: a repair whose day is not recorded is no use of it.
      select p.welded_on, x.process, 'repair', format('repair %s of weld %s on ISO %s, WPS %s rev %s',
             p.repair_cycle, w.weld_number, i.iso_number, ww.wps_number, ww.revision), w.id, null, null
        from weld_public.weld_repairs p
        join weld_public.welds w on w.tenant_id = p.tenant_id and w.id = p.weld_id
        join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
        join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = coalesce(p.wps_id, w.wps_id)
        cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
       where p.tenant_id = welder.tenant_id and p.welder_id = welder.id and p.welded_on is not null
         and p.rewelded_at is not null and w.status <> 'VOIDED'
    ) u
   order by u.used_on desc, u.source || '/' || u.process || '/' || coalesce(u.weld_id, u.continuity_id) desc
$$;

comment on function weld_public.welders_continuity(weld_public.welders) is
  'The welder''s uses of each process, newest first: every weld on record (per process of its WPS), every repair they welded, and every documented use (QW-322.1(a)).';

grant execute on function weld_public.welders_continuity(weld_public.welders) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.welders_continuity.sql
--! Included functions/weld_private.report_facts_of.sql
-- What the reports count of each weld of `weld_ids`, computed from the sources: the weld, its
-- status history, its repairs, its selections, its RT and UT examinations. It is the definition
-- of the rollups weld_private.welder_month_counts and iso_week_counts: those hold, at every
-- commit, the sums of these rows (weld_private.refresh_report_facts keeps them so).
--
-- - made_month: a welder's work is a weld welded, by a welder, not VOIDED.
-- - welded_week / accepted_week: Mondays. A weld ACCEPTED now counts as accepted in the week of
--   its last move to ACCEPTED in the history, or of its creation when it came in ACCEPTED.
-- - The repair rate counts random examinations of original work (B31.3 341.3.4, 344.1.3): the RT
--   and UT records of a weld never drawn as a progressive tier of RT or UT, made before its first
--   repair (dated before the day it was welded, or recorded before it was released for it).
--   examined_month: the month of the first of them; rejected: one of them rejects it. A record's
--   result for the weld is the one given, else its film's (ndt_record_welds_effective_result).
-- - length_in: pi x the outside diameter of the NPS (inches, 3 places), the length examined;
--   null when the size is no standard NPS, never guessed.
-- - defect_length_in: the length of the defects those records found (the record's
--   defect_length_in for the weld, else its rejected film intervals'); 0 when none rejected it;
--   null when one that rejected it recorded no length: unknown, never the circumference.
-- Dates are the calendar's, weeks and months taken without a time zone; moments (accepted_at,
-- released_at) are read in UTC.
create or replace function weld_private.report_facts_of(tenant uuid, weld_ids uuid[])
  returns setof weld_private.weld_report_facts
  -- (No SET search_path, so PostgreSQL inlines it into its one caller, refresh_report_facts,
  -- whose search_path is pinned; every name here is qualified or pg_catalog's.)
  language sql stable
as $$
  select w.tenant_id, w.id, w.iso_id, w.welder_id,
         case when w.status <> 'VOIDED' and w.welder_id is not null and w.welded_on is not null
              then date_trunc('month', w.welded_on::timestamp)::date end as made_month,
         case when w.status <> 'VOIDED'
              then w.welded_on - (extract(isodow from w.welded_on)::integer - 1) end as welded_week,
         a.day - (extract(isodow from a.day)::integer - 1) as accepted_week,
         coalesce(x.rejected, false) as rejected,
         round(pg_catalog.pi()::numeric * weld_private.outside_diameter(w.size), 3) as length_in,
         case when w.status <> 'VOIDED' and w.welder_id is not null then x.examined_month end
           as examined_month,
         x.defect_length_in
    from weld_public.welds w
    left join lateral (
      select (coalesce(max(h.changed_at), w.created_at) at time zone 'UTC')::date as day
        from weld_public.weld_status_history h
       where h.tenant_id = w.tenant_id and h.weld_id = w.id and h.to_status = 'ACCEPTED'
    ) a on w.status = 'ACCEPTED'
    left join weld_public.weld_repairs first_repair
      on first_repair.tenant_id = w.tenant_id and first_repair.weld_id = w.id
     and first_repair.repair_cycle = 1
    left join lateral (
      select date_trunc('month', min(r.examined_on)::timestamp)::date as examined_month,
             bool_or(e.result = 'rejected') as rejected,
             case when bool_and(e.result <> 'rejected' or e.length_in is not null)
                  then coalesce(sum(e.length_in) filter (where e.result = 'rejected'), 0) end
               as defect_length_in
        from weld_public.ndt_record_welds nw
        join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
        cross join lateral (
          select weld_public.ndt_record_welds_effective_result(nw) as result,
                 coalesce(nw.defect_length_in, (
                   select sum(f.defect_length_in)
                     from weld_public.film_interval_welds fw
                     join weld_public.film_intervals f on f.tenant_id = fw.tenant_id and f.id = fw.film_interval_id
                    where fw.tenant_id = nw.tenant_id and fw.ndt_record_id = nw.ndt_record_id
                      and fw.weld_id = nw.weld_id and f.result = 'rejected'
                   having bool_and(f.defect_length_in is not null))) as length_in
        ) e
       where nw.tenant_id = w.tenant_id and nw.weld_id = w.id and r.method in ('RT', 'UT')
         and (first_repair.id is null or r.created_at < first_repair.released_at
              or r.examined_on < coalesce(first_repair.welded_on,
                                          (first_repair.rewelded_at at time zone 'UTC')::date))
         and not exists (select from weld_public.examination_selections s
                          where s.tenant_id = w.tenant_id and s.weld_id = w.id
                            and s.method in ('RT', 'UT') and s.tier in ('1', '2', 'full'))
      having count(*) > 0
    ) x on true
   where w.tenant_id = tenant and w.id = any(weld_ids)
$$;
--! EndIncluded functions/weld_private.report_facts_of.sql
--! Included functions/weld_private.refresh_report_facts.sql
-- Brings the report facts of the welds `weld_ids` of `tenant` (every weld of it when null) up to
-- date with weld_private.report_facts_of, and moves each changed part in the rollups: the old
-- facts of a weld are taken out of the counts, the new ones put in. Called at commit for the
-- welds the transaction changed (weld_private.tg_report_facts_queue__refresh), so the rollups are
-- exact at every commit, like the ISO counts.
--
-- The old facts are locked first (a concurrent change of the same weld waits), then the rollup
-- rows in key order, welder-months before ISO-weeks, so two writers cannot deadlock here.
-- Only what moved is written: a status change to ACCEPTED touches one ISO-week row, an NDT result
-- one welder-month row (a status change is on the hot path: bench/RESULTS.md, "Reports").
-- Rows that fall to zero stay (a weld moved to another month leaves one); the reports skip them.
create or replace function weld_private.refresh_report_facts(tenant uuid, weld_ids uuid[])
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  -- Planned once per session: left to choose, PostgreSQL planned the facts query again at every
  -- call (its custom plans look cheaper for a few ids), most of a refresh's time.
  set plan_cache_mode = force_generic_plan
as $$
declare
  before weld_private.weld_report_facts[];
  after weld_private.weld_report_facts[];
  chunk uuid[];
begin
  if weld_ids is null then
    -- The whole tenant (the migration that made the rollups; a DBA's repair): counted afresh,
    -- 10,000 welds at a time through the path below.
    delete from weld_private.welder_month_counts c where c.tenant_id = tenant;
    delete from weld_private.iso_week_counts c where c.tenant_id = tenant;
    delete from weld_private.weld_report_facts f where f.tenant_id = tenant;
    for chunk in
      select array_agg(w.id)
        from (select w.id, (row_number() over (order by w.id) - 1) / 10000 as n
                from weld_public.welds w where w.tenant_id = tenant) w
       group by w.n
    loop
      perform weld_private.refresh_report_facts(tenant, chunk);
    end loop;
    return;
  end if;
  if cardinality(weld_ids) > 10000 then
    -- A bulk write (an import): 10,000 welds at a time, so the arrays below stay small.
    for chunk in
      select array_agg(u.id) from (select u.id, (row_number() over () - 1) / 10000 as n
                                     from unnest(weld_ids) as u (id)) u
       group by u.n
    loop
      perform weld_private.refresh_report_facts(tenant, chunk);
    end loop;
    return;
  end if;

  select coalesce(array_agg(f order by f.weld_id), '{}') into before
    from (select * from weld_private.weld_report_facts f
           where f.tenant_id = tenant and f.weld_id = any(weld_ids)
           order by f.weld_id
             for update) f;
  select coalesce(array_agg(f order by f.weld_id), '{}') into after
    from weld_private.report_facts_of(tenant, weld_ids) f;
  if before = after then
    return; -- nothing the reports count moved
  end if;

  -- The facts, written in place, not deleted and inserted again: a writer waiting on the lock
  -- above then reads the row as this one left it (a deleted row would be skipped, its part lost).
  insert into weld_private.weld_report_facts as f
  select * from unnest(after)
  on conflict (tenant_id, weld_id) do update
     set iso_id = excluded.iso_id, welder_id = excluded.welder_id,
         made_month = excluded.made_month, welded_week = excluded.welded_week,
         accepted_week = excluded.accepted_week, rejected = excluded.rejected,
         length_in = excluded.length_in, examined_month = excluded.examined_month,
         defect_length_in = excluded.defect_length_in
   where (f.*) is distinct from (excluded.*);
  -- Welds deleted: their facts go (an anti-join, hashed: not a test of each against all).
  delete from weld_private.weld_report_facts f
   where f.tenant_id = tenant
     and f.weld_id in (select b.weld_id from unnest(before) b
                       except select a.weld_id from unnest(after) a);

  -- The welder-months, when what they count moved: the old facts with -1, the new with +1. A
  -- weld counts as made in the month it was welded, and as examined (rejected, its lengths) in
  -- the month it was first examined.
  if array(select row(b.welder_id, b.made_month, b.examined_month, b.rejected, b.length_in, b.defect_length_in)
             from unnest(before) b)
     is distinct from
     array(select row(a.welder_id, a.made_month, a.examined_month, a.rejected, a.length_in, a.defect_length_in)
             from unnest(after) a) then
    with change as (
      select -1 as sign, b.* from unnest(before) b
      union all
      select 1, a.* from unnest(after) a
    ), parts as (
      select d.welder_id, d.made_month as month, d.sign as made, 0 as examined, 0 as rejected,
             0::numeric as length_examined, 0::numeric as defect_length, 0 as unknown, 0 as defect_unknown
        from change d
       where d.made_month is not null
      union all
      select d.welder_id, d.examined_month, 0, d.sign, case when d.rejected then d.sign else 0 end,
             coalesce(d.sign * d.length_in, 0), coalesce(d.sign * d.defect_length_in, 0),
             case when d.length_in is null then d.sign else 0 end,
             case when d.rejected and d.defect_length_in is null then d.sign else 0 end
        from change d
       where d.examined_month is not null
    ), delta as (
      select p.welder_id, p.month, sum(p.made)::integer as made, sum(p.examined)::integer as examined,
             sum(p.rejected)::integer as rejected, sum(p.length_examined) as length_examined,
             sum(p.defect_length) as defect_length, sum(p.unknown)::integer as unknown,
             sum(p.defect_unknown)::integer as defect_unknown
        from parts p
       group by p.welder_id, p.month
    )
    insert into weld_private.welder_month_counts as c
           (tenant_id, welder_id, month, welds_made, welds_examined, welds_rejected,
            length_examined_in, length_unknown, defect_length_in, defect_length_unknown)
    select tenant, d.welder_id, d.month, d.made, d.examined, d.rejected, d.length_examined,
           d.unknown, d.defect_length, d.defect_unknown
      from delta d
     where (d.made, d.examined, d.rejected, d.length_examined, d.defect_length, d.unknown, d.defect_unknown)
           <> (0, 0, 0, 0, 0, 0, 0)
     order by d.welder_id, d.month
    on conflict (tenant_id, welder_id, month) do update
       set welds_made = c.welds_made + excluded.welds_made,
           welds_examined = c.welds_examined + excluded.welds_examined,
           welds_rejected = c.welds_rejected + excluded.welds_rejected,
           length_examined_in = c.length_examined_in + excluded.length_examined_in,
           length_unknown = c.length_unknown + excluded.length_unknown,
           defect_length_in = c.defect_length_in + excluded.defect_length_in,
           defect_length_unknown = c.defect_length_unknown + excluded.defect_length_unknown;
  end if;

  -- The ISO-weeks, likewise.
  if array(select row(b.iso_id, b.welded_week, b.accepted_week) from unnest(before) b)
     is distinct from
     array(select row(a.iso_id, a.welded_week, a.accepted_week) from unnest(after) a) then
    with change as (
      select -1 as sign, b.* from unnest(before) b
      union all
      select 1, a.* from unnest(after) a
    ), delta as (
      select e.iso_id, e.week, sum(e.welded)::integer as welded, sum(e.accepted)::integer as accepted
        from (select d.iso_id, d.welded_week as week, d.sign as welded, 0 as accepted
                from change d where d.welded_week is not null
              union all
              select d.iso_id, d.accepted_week, 0, d.sign
                from change d where d.accepted_week is not null) e
       group by e.iso_id, e.week
    )
    insert into weld_private.iso_week_counts as c (tenant_id, iso_id, week, welded, accepted)
    select tenant, d.iso_id, d.week, d.welded, d.accepted
      from delta d
     where (d.welded, d.accepted) <> (0, 0)
     order by d.iso_id, d.week
    on conflict (tenant_id, iso_id, week) do update
       set welded = c.welded + excluded.welded, accepted = c.accepted + excluded.accepted;
  end if;
end
$$;
--! EndIncluded functions/weld_private.refresh_report_facts.sql
--! Included functions/weld_private.tg__report_facts.sql
-- Keeps the report rollups (weld_private.refresh_report_facts) exact: every write to what
-- weld_private.report_facts_of reads names the welds it touched, tenant by tenant, in the
-- transaction's queue (weld_private.queue_report_facts); at commit, one deferred trigger per
-- tenant refreshes them all at once (weld_private.tg_report_facts_queue__refresh).
--
-- Why at commit, once: a transaction that refreshed at each statement took rollup rows in the
-- order of its statements (an NDT record's welds, then their status changes), and two such
-- transactions over the same welder-months and ISO-weeks could deadlock. Refreshed once, in key
-- order, they queue instead. (A change to ACCEPTED is also refreshed once, not at the weld's update
-- and again at its history row.)
--
-- Statement triggers (inserts, deletes, the updates of NDT results) read the statement's rows
-- from its transition tables; tg_argv[0] names the column that holds the weld. Row triggers,
-- narrowed by WHEN to the columns the facts read, serve the hot paths: a weld's status change
-- (only to or from ACCEPTED or VOIDED matters), an NDT record's method or date, a film
-- interval's result or defect length.
create or replace function weld_private.tg__report_facts() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  statement_rows text;
  ids uuid[];
  pair record;
begin
  if tg_op = 'TRUNCATE' then
    -- Every weld of every tenant is gone (a DBA's TRUNCATE fires no delete trigger).
    truncate weld_private.weld_report_facts, weld_private.welder_month_counts,
             weld_private.iso_week_counts;
    return null;
  end if;

  if tg_level = 'STATEMENT' then
    statement_rows := case tg_op
      when 'INSERT' then 'select * from new_rows'
      when 'DELETE' then 'select * from old_rows'
      else 'select * from new_rows union all select * from old_rows' end;
    for pair in execute format(
      'select r.tenant_id, array_agg(distinct r.%I) as ids from (%s) r %s group by r.tenant_id',
      tg_argv[0], statement_rows,
      -- (Only moves to ACCEPTED are read from the history.)
      case when tg_table_name = 'weld_status_history' then 'where r.to_status = ''ACCEPTED''' end)
    loop
      perform weld_private.queue_report_facts(pair.tenant_id, pair.ids);
    end loop;
    return null;
  end if;

  if tg_table_name = 'welds' then
    if old.tenant_id <> new.tenant_id then
      perform weld_private.queue_report_facts(old.tenant_id, array[old.id]);
    end if;
    ids := array[new.id];
  elsif tg_table_name = 'ndt_records' then
    select array_agg(nw.weld_id) into ids
      from weld_public.ndt_record_welds nw
     where nw.tenant_id = new.tenant_id and nw.ndt_record_id = new.id;
  else -- film_intervals
    select array_agg(fw.weld_id) into ids
      from weld_public.film_interval_welds fw
     where fw.tenant_id = new.tenant_id and fw.film_interval_id = new.id;
  end if;
  if ids is not null then
    perform weld_private.queue_report_facts(new.tenant_id, ids);
  end if;
  return null;
end
$$;

-- Welds: made or deleted (per statement), changed in what the facts read (per row), truncated.
create or replace trigger _510_report_facts_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('id');
create or replace trigger _510_report_facts_delete after delete on weld_public.welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('id');
create or replace trigger _510_report_facts_truncate after truncate on weld_public.welds
  for each statement execute function weld_private.tg__report_facts();
create or replace trigger _510_report_facts_update
  after update of status, welder_id, welded_on, size, iso_id, tenant_id on weld_public.welds
  for each row
  when ((old.status = 'ACCEPTED') <> (new.status = 'ACCEPTED')
        or (old.status = 'VOIDED') <> (new.status = 'VOIDED')
        or old.welder_id is distinct from new.welder_id
        or old.welded_on is distinct from new.welded_on
        or old.size <> new.size or old.iso_id <> new.iso_id or old.tenant_id <> new.tenant_id)
  execute function weld_private.tg__report_facts();

-- The status history: when a weld last became ACCEPTED.
create or replace trigger _510_report_facts_insert after insert on weld_public.weld_status_history
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_delete after delete on weld_public.weld_status_history
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');

-- The welds an NDT record covers, and their results.
create or replace trigger _510_report_facts_insert after insert on weld_public.ndt_record_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_delete after delete on weld_public.ndt_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_update after update on weld_public.ndt_record_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');

-- An NDT record's method (RT and UT count) and its film: which welds an interval shows, and its
-- result (a weld's result in the record when none was given).
create or replace trigger _510_report_facts_update
  after update of method, examined_on on weld_public.ndt_records
  for each row when (old.method <> new.method or old.examined_on <> new.examined_on)
  execute function weld_private.tg__report_facts();
create or replace trigger _510_report_facts_insert after insert on weld_public.film_interval_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_delete after delete on weld_public.film_interval_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_update
  after update of result, defect_length_in on weld_public.film_intervals
  for each row when (old.result <> new.result or old.defect_length_in is distinct from new.defect_length_in)
  execute function weld_private.tg__report_facts();

-- The repairs (which records were of original work) and the selections (a progressive tier's
-- weld is no random examination).
create or replace trigger _510_report_facts_insert after insert on weld_public.weld_repairs
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_update after update on weld_public.weld_repairs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_delete after delete on weld_public.weld_repairs
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_insert after insert on weld_public.examination_selections
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_delete after delete on weld_public.examination_selections
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
--! EndIncluded functions/weld_private.tg__report_facts.sql
--! Included functions/weld_hidden.report_welder_performance.sql
-- Welder performance: per welder and month, the welds they made that month, and the random
-- examinations of original work first made that month by a volumetric method (RT or UT: the
-- examinations a repair rate is quoted on), those rejected, and the repair rate by joint and by
-- length against the tenant's threshold (tenant_settings.repair_rate_threshold_percent, 5 by
-- default), once enough were examined (repair_rate_min_examined, 10 by default).
--
-- What a weld counts is weld_private.report_facts_of's (the rules are written there): its work in
-- the month welded; its examination in the month of its first original RT or UT record, never as
-- a progressive tier or a repair's re-shoot. VOIDED welds drop out, as from every count; welds
-- with no date welded or no welder are not anyone's work yet. By length: the defects' length
-- over the length examined (pi x the outside diameter of each weld examined); unknown (null)
-- while a rejection recorded no defect length, and the welds whose size has no known outside
-- diameter are counted in length_unknown rather than guessed.
--
-- The counts are the rollup weld_private.welder_month_counts, kept by
-- weld_private.refresh_report_facts; the rates are worked out here.
--
-- SECURITY DEFINER as weld_rules, which may use the rules' private functions: the reader needs
-- only EXECUTE (weld_viewer and the reporting logins have it); row security still applies, with
-- the reader's tenant. The view weld_reports.welder_performance is how readers see it.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.report_welder_performance()
  returns table (
    welder_id uuid,
    welder_stamp text,
    welder_name text,
    month date,
    welds_made integer,
    welds_examined integer,
    welds_rejected integer,
    repair_rate_percent float8,
    length_examined_in float8,
    defect_length_in float8,
    repair_rate_by_length_percent float8,
    length_unknown integer,
    defect_length_unknown integer,
    threshold_percent float8,
    minimum_examined integer,
    over_threshold boolean
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select c.welder_id, v.stamp as welder_stamp, v.name as welder_name, c.month,
         c.welds_made, c.welds_examined, c.welds_rejected,
         (100.0 * c.welds_rejected / nullif(c.welds_examined, 0))::float8 as repair_rate_percent,
         c.length_examined_in::float8, c.defect_length_in::float8,
         case when c.defect_length_unknown = 0
              then (100.0 * c.defect_length_in / nullif(c.length_examined_in, 0))::float8 end
           as repair_rate_by_length_percent,
         c.length_unknown, c.defect_length_unknown,
         s.threshold::float8 as threshold_percent, s.minimum as minimum_examined,
         coalesce(c.welds_examined >= s.minimum
                  and 100.0 * c.welds_rejected / nullif(c.welds_examined, 0) > s.threshold, false)
           as over_threshold
    from weld_private.welder_month_counts c
    join weld_public.welders v on v.tenant_id = c.tenant_id and v.id = c.welder_id
    cross join (
      select coalesce(max(ts.repair_rate_threshold_percent), 5) as threshold,
             coalesce(max(ts.repair_rate_min_examined), 10) as minimum
        from weld_public.tenant_settings ts
    ) s
   where c.welds_made > 0 or c.welds_examined > 0
$$;

comment on function weld_hidden.report_welder_performance() is
  'Welder performance per welder and month: the rows of the view weld_reports.welder_performance.';

grant execute on function weld_hidden.report_welder_performance() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_welder_performance.sql
--! Included views/weld_reports.welder_performance.sql
-- Welder performance: the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_welder_performance()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/welder-performance) and the reporting logins.
create or replace view weld_reports.welder_performance with (security_invoker = true) as
  select * from weld_hidden.report_welder_performance()
   where (select weld_hidden.require_scope('{reports:read}')); -- OAuth2 scopes (000045)

comment on view weld_reports.welder_performance is
  E'@primaryKey welder_id,month\n@behavior +aggregates\nPer welder and month: the welds made that month; the welds first examined that month by random RT or UT of original work (not progressive tiers, not repair re-shoots), those rejected, and the repair rate by joint and by length against the tenant''s threshold, once the minimum sample was examined.';
comment on column weld_reports.welder_performance.month is
  'The first day of the month: the month the welds were made (welds_made), and the month they were first examined (the examinations and rates).';
comment on column weld_reports.welder_performance.welds_made is
  'Welds the welder made that month (not VOIDED).';
comment on column weld_reports.welder_performance.welds_examined is
  'Welds of the welder first examined that month by a random RT or UT record of original work: no progressive tier, no repair re-shoot.';
comment on column weld_reports.welder_performance.welds_rejected is
  'Of those, the welds a record of original work rejected (its result, else its film''s), however repaired since.';
comment on column weld_reports.welder_performance.repair_rate_percent is
  'welds_rejected / welds_examined x 100; null when none was examined.';
comment on column weld_reports.welder_performance.length_examined_in is
  'The circumferences (pi x outside diameter, inches) of the welds examined, where the size is known.';
comment on column weld_reports.welder_performance.defect_length_in is
  'The length of the defects found in the welds rejected (inches), as the NDT records give it for each weld or film interval.';
comment on column weld_reports.welder_performance.repair_rate_by_length_percent is
  'defect_length_in / length_examined_in x 100; null while a rejection records no defect length (defect_length_unknown).';
comment on column weld_reports.welder_performance.length_unknown is
  'Welds examined whose size has no known outside diameter: left out of the lengths.';
comment on column weld_reports.welder_performance.defect_length_unknown is
  'Welds rejected whose defect length is not recorded: the rate by length is unknown while any is.';
comment on column weld_reports.welder_performance.minimum_examined is
  'The fewest welds examined in a month before the rate may be over the threshold (tenant_settings.repair_rate_min_examined).';
comment on column weld_reports.welder_performance.over_threshold is
  'At least minimum_examined welds were examined and the repair rate by joint is over threshold_percent (tenant_settings.repair_rate_threshold_percent).';

grant select on weld_reports.welder_performance to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.welder_performance.sql
--! Included functions/weld_hidden.send_welder_alerts.sql
-- A tenant's welder alerts for today, once across instances: the first call of the day inserts
-- the day's row in weld_private.alert_days and sends; a call on another instance at the same
-- moment waits for that insert's commit and then finds the row (0 sent). Each alert is sent once
-- (weld_private.welder_alerts): a tick that runs again sends nothing twice, and a tick that runs
-- after days without one catches up on what happened meanwhile (within the last 12 months: older
-- is history, not news).
--
--   qualification.lapsing  a qualification in force today stops being in force for a process
--                          (by its expiry or by continuity, QW-322.1(a): the qualification
--                          expiry report's valid_until) within 30, 14 or 3 days: the smallest of
--                          those it is within, once each (a band a missed day skipped is not sent
--                          late); change: process, validUntil, daysLeft, cause, threshold
--   qualification.lapsed   a qualification of an active welder that is no longer in force for a
--                          process (expired or lapsed on a day before today, announced as lapsing
--                          or not), unless the welder holds another qualification in force today
--                          for that process (a renewal, say); once per qualification, process and
--                          day; change: process, validUntil, state
--   welder.repair_rate_exceeded
--                          a welder's repair rate by joint in a month examined is over the
--                          tenant's threshold with at least its minimum sample examined (the
--                          welder performance report's over_threshold), once per welder and month;
--                          change: month, weldsExamined, weldsRejected, repairRatePercent,
--                          thresholdPercent, minimumExamined
--
-- `data` is the qualification (or welder) as its GET shows it. SECURITY DEFINER as the owner,
-- which writes the events and reads the resources' JSON (weld_private.event_data); every query
-- names the tenant, and the reports it reads run with the tenant's claim, set here and given back.
create or replace function weld_hidden.send_welder_alerts(tenant uuid) returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  caller_tenant text := current_setting('jwt.claims.tenant_id', true);
  sent integer := 0;
  n integer;
begin
  if tenant is null then
    raise exception 'send_welder_alerts needs a tenant' using errcode = '22004';
  end if;
  perform set_config('jwt.claims.tenant_id', tenant::text, true);
  insert into weld_private.alert_days (tenant_id, day) values (tenant, current_date)
  on conflict do nothing;
  get diagnostics n = row_count;
  if n = 0 then
    perform set_config('jwt.claims.tenant_id', coalesce(caller_tenant, ''), true);
    return 0; -- sent today already, here or by another instance
  end if;

  with due as (
    select q.qualification_id, q.process, q.valid_until, q.cause, q.days_left,
           (select min(t) from unnest(array[30, 14, 3]) as t where q.days_left <= t) as threshold
      from weld_hidden.report_qualification_expiry() q
     where q.days_left <= 30
  ), fresh as (
    insert into weld_private.welder_alerts (tenant_id, subject_id, process, kind, on_date, threshold)
    select tenant, d.qualification_id, d.process, 'lapsing', d.valid_until, d.threshold from due d
    on conflict do nothing
    returning subject_id, process, on_date, threshold
  ), events as (
    insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data, change)
    select tenant, 'qualification.lapsing', d.qualification_id, null,
           weld_private.event_data('welder_qualification', tenant, d.qualification_id),
           jsonb_build_object('process', d.process, 'validUntil', d.valid_until, 'daysLeft', d.days_left,
                              'cause', d.cause, 'threshold', d.threshold)
      from due d
      join fresh f on f.subject_id = d.qualification_id and f.process = d.process
                  and f.on_date = d.valid_until and f.threshold = d.threshold
    returning 1
  )
  select sent + count(*) into sent from events;

  with status as (
    select w.id as welder_id, s.*, least(s.expires_on, s.continuity_until) as valid_until
      from weld_public.welders w
      cross join lateral weld_public.welders_qualification_status(w, current_date) s
     where w.tenant_id = tenant and w.active
  ), lapsed as (
    select l.qualification_id as subject_id, l.process, l.valid_until as on_date, l.state
      from status l
     where l.state in ('expired', 'lapsed')
       and l.valid_until >= current_date - 365 and l.valid_until < current_date
       and not exists (select from status k
                        where k.welder_id = l.welder_id and k.process = l.process and k.state = 'valid')
  ), fresh as (
    insert into weld_private.welder_alerts (tenant_id, subject_id, process, kind, on_date)
    select tenant, l.subject_id, l.process, 'lapsed', l.on_date from lapsed l
    on conflict do nothing
    returning subject_id, process, on_date
  ), events as (
    insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data, change)
    select tenant, 'qualification.lapsed', l.subject_id, null,
           weld_private.event_data('welder_qualification', tenant, l.subject_id),
           jsonb_build_object('process', l.process, 'validUntil', l.on_date, 'state', l.state)
      from lapsed l
      join fresh f on f.subject_id = l.subject_id and f.process = l.process and f.on_date = l.on_date
    returning 1
  )
  select sent + count(*) into sent from events;

  with over as (
    select p.welder_id, p.month, p.welds_examined, p.welds_rejected, p.repair_rate_percent,
           p.threshold_percent, p.minimum_examined
      from weld_hidden.report_welder_performance() p
     where p.over_threshold and p.month >= date_trunc('month', current_date - interval '12 months')::date
  ), fresh as (
    insert into weld_private.welder_alerts (tenant_id, subject_id, kind, on_date)
    select tenant, o.welder_id, 'repair_rate', o.month from over o
    on conflict do nothing
    returning subject_id, on_date
  ), events as (
    insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data, change)
    select tenant, 'welder.repair_rate_exceeded', o.welder_id, null,
           weld_private.event_data('welder', tenant, o.welder_id),
           jsonb_build_object('month', o.month, 'weldsExamined', o.welds_examined,
                              'weldsRejected', o.welds_rejected, 'repairRatePercent', o.repair_rate_percent,
                              'thresholdPercent', o.threshold_percent, 'minimumExamined', o.minimum_examined)
      from over o
      join fresh f on f.subject_id = o.welder_id and f.on_date = o.month
    returning 1
  )
  select sent + count(*) into sent from events;

  perform set_config('jwt.claims.tenant_id', coalesce(caller_tenant, ''), true);
  return sent;
end
$$;

revoke execute on function weld_hidden.send_welder_alerts(uuid) from public;
grant execute on function weld_hidden.send_welder_alerts(uuid) to weld_authenticator;
--! EndIncluded functions/weld_hidden.send_welder_alerts.sql
--! Included functions/weld_private.event_data.sql
create or replace function weld_private.event_data(kind text, tenant uuid, subject uuid) returns jsonb
  language plpgsql stable
as $$
declare
  result jsonb;
begin
  case kind
    when 'iso' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.isos r where r.tenant_id = tenant and r.id = subject;
    when 'weld' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.welds r where r.tenant_id = tenant and r.id = subject;
    when 'welder' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.welders r where r.tenant_id = tenant and r.id = subject;
    when 'pqr' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.pqrs r where r.tenant_id = tenant and r.id = subject;
    when 'wps' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object('pqrIds', array(
               select l.pqr_id from weld_public.wps_pqrs l
                where l.tenant_id = r.tenant_id and l.wps_id = r.id order by l.pqr_id))
        into result
        from weld_public.wps r where r.tenant_id = tenant and r.id = subject;
    when 'welder_qualification' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.welder_qualifications r where r.tenant_id = tenant and r.id = subject;
    when 'ndt_record' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object(
               'welds', weld_hidden.ndt_record_welds_json(r),
               'filmIntervals', weld_hidden.ndt_record_film_json(r))
        into result
        from weld_public.ndt_records r where r.tenant_id = tenant and r.id = subject;
    when 'inspection' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object('weldIds', array(
               select l.weld_id from weld_public.inspection_welds l
                where l.tenant_id = r.tenant_id and l.inspection_id = r.id order by l.weld_id))
        into result
        from weld_public.inspections r where r.tenant_id = tenant and r.id = subject;
    when 'test_package' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object(
               'isoIds', array(select l.iso_id from weld_public.test_package_isos l
                                where l.tenant_id = r.tenant_id and l.test_package_id = r.id
                                order by l.iso_id),
               'weldIds', array(select l.weld_id from weld_public.test_package_welds l
                                 where l.tenant_id = r.tenant_id and l.test_package_id = r.id
                                 order by l.weld_id))
        into result
        from weld_public.test_packages r where r.tenant_id = tenant and r.id = subject;
    when 'pwht_record' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object('weldIds', array(
               select l.weld_id from weld_public.pwht_record_welds l
                where l.tenant_id = r.tenant_id and l.pwht_record_id = r.id order by l.weld_id))
        into result
        from weld_public.pwht_records r where r.tenant_id = tenant and r.id = subject;
    when 'hardness_reading' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.hardness_readings r where r.tenant_id = tenant and r.id = subject;
    when 'component' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.components r where r.tenant_id = tenant and r.id = subject;
    when 'filler_lot' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.filler_lots r where r.tenant_id = tenant and r.id = subject;
    when 'weld_filler' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.weld_fillers r where r.tenant_id = tenant and r.id = subject;
    when 'punch_item' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.punch_items r where r.tenant_id = tenant and r.id = subject;
    when 'attachment' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.attachments r where r.tenant_id = tenant and r.id = subject;
    when 'weld_repair' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.weld_repairs r where r.tenant_id = tenant and r.id = subject;
    when 'examination_selection' then
      select weld_hidden.examination_selection_json(s) into result
        from weld_public.examination_selections s
       where s.tenant_id = tenant and s.id = subject;
  end case;
  return result;
end
$$;
--! EndIncluded functions/weld_private.event_data.sql
--! Included functions/weld_private.tg__outbox.sql
-- The outbox trigger of a resource table (argument: the resource's kind, e.g. 'weld'). DEFERRED:
-- it runs at commit, once for each row change in the order they happened, so the first firing for
-- a resource sees its state before the transaction (OLD) and its final state (the table now).
-- A resource created and deleted in one transaction leaves no event; created and changed is one
-- `created`; changed and deleted is one `deleted`.
create or replace function weld_private.tg__outbox() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  kind text := tg_argv[0];
  subject uuid;
  tenant uuid;
  data jsonb;
  before jsonb;
  change jsonb;
  event_type text;
  earlier_id bigint;
  earlier_type text;
begin
  if weld_private.events_suppressed() then
    return null;
  end if;
  if tg_op = 'DELETE' then
    subject := old.id;
    tenant := old.tenant_id;
  else
    subject := new.id;
    tenant := new.tenant_id;
  end if;

  if tg_op = 'DELETE' then
    select e.id, e.type into earlier_id, earlier_type
      from weld_private.transaction_event(tenant, kind, subject) e;
    if earlier_type = kind || '.created' then
      delete from weld_hidden.pending_events p where p.tenant_id = tenant and p.n = earlier_id;
    elsif earlier_id is not null then
      update weld_hidden.pending_events p
         set type = kind || '.deleted', data = weld_private.contract_json(to_jsonb(old)), change = null
       where p.tenant_id = tenant and p.n = earlier_id;
    -- A whole tenant being deleted announces nothing (its events go with it, and the relay drops
    -- those still waiting).
    elsif exists (select from weld_public.tenants t where t.id = tenant) then
      perform weld_private.emit_event(tenant, kind || '.deleted', subject,
                                      weld_private.contract_json(to_jsonb(old)), null);
    end if;
    return null;
  end if;

  data := weld_private.event_data(kind, tenant, subject);
  if tg_op = 'INSERT' then
    -- Gone again before commit: a placeholder the DELETE firing that follows removes.
    if not weld_private.emit_event(tenant, kind || '.created', subject, coalesce(data, '{}'), null)
       and data is not null then
      perform weld_private.refresh_event(tenant, kind, subject, data);
    end if;
    return null;
  end if;
  if data is null then
    return null; -- deleted later in this transaction: its DELETE firing speaks for it
  end if;
  event_type := kind || '.updated';
  before := to_jsonb(old);
  if kind = 'weld' and before ->> 'status' is distinct from data ->> 'status' then
    event_type := 'weld.status_changed';
    -- Why: the history row this transaction wrote (change_weld_status and the NDT functions
    -- write one). A status set by a plain UPDATE (a DBA) has none: cause 'system'.
    select jsonb_build_object('from', before ->> 'status', 'to', data ->> 'status',
                              'reason', h.reason, 'cause', coalesce(h.cause, 'system'),
                              'ndtRecordId', h.ndt_record_id)
      into change
      from (select) as always_one_row
      left join lateral (
        select h.reason, h.cause, h.ndt_record_id
          from weld_public.weld_status_history h
         where h.tenant_id = tenant and h.weld_id = subject and h.changed_at >= now()
         order by h.id desc
         limit 1) h on true;
  elsif kind = 'test_package' and before ->> 'state' is distinct from data ->> 'state' then
    event_type := case data ->> 'state' when 'released' then 'test_package.released'
                                        else 'test_package.updated' end;
    change := jsonb_build_object('from', before ->> 'state', 'to', data ->> 'state');
  end if;
  if not weld_private.emit_event(tenant, event_type, subject, data, change) then
    perform weld_private.refresh_event(tenant, kind, subject, data);
  end if;
  return null;
end
$$;

-- The tables an import writes (100,000 rows at a time) skip even queueing a row whose
-- transaction the import marked (begin_weld_import): a constraint trigger's WHEN is judged when
-- the row is written, not at commit, and 100,000 deferred calls cost the commit 0.4 s.
drop trigger if exists _900_outbox on weld_public.inspections;
create constraint trigger _900_outbox after insert or delete or update on weld_public.inspections
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('inspection');
drop trigger if exists _900_outbox on weld_public.isos;
create constraint trigger _900_outbox after insert or delete or update on weld_public.isos
  deferrable initially deferred
  for each row when (pg_catalog.to_regclass('pg_temp.weld_bulk_evented') is null)
  execute function weld_private.tg__outbox('iso');
drop trigger if exists _900_outbox on weld_public.ndt_records;
create constraint trigger _900_outbox after insert or delete or update on weld_public.ndt_records
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('ndt_record');
drop trigger if exists _900_outbox on weld_public.pqrs;
create constraint trigger _900_outbox after insert or delete or update on weld_public.pqrs
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('pqr');
drop trigger if exists _900_outbox on weld_public.test_packages;
create constraint trigger _900_outbox after insert or delete or update on weld_public.test_packages
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('test_package');
drop trigger if exists _900_outbox on weld_public.welder_qualifications;
create constraint trigger _900_outbox after insert or delete or update on weld_public.welder_qualifications
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('welder_qualification');
drop trigger if exists _900_outbox on weld_public.welders;
create constraint trigger _900_outbox after insert or delete or update on weld_public.welders
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('welder');
drop trigger if exists _900_outbox on weld_public.welds;
create constraint trigger _900_outbox after insert or delete or update on weld_public.welds
  deferrable initially deferred
  for each row when (pg_catalog.to_regclass('pg_temp.weld_bulk_evented') is null)
  execute function weld_private.tg__outbox('weld');
drop trigger if exists _900_outbox on weld_public.wps;
create constraint trigger _900_outbox after insert or delete or update on weld_public.wps
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('wps');
drop trigger if exists _900_outbox on weld_public.pwht_records;
create constraint trigger _900_outbox after insert or delete or update on weld_public.pwht_records
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('pwht_record');
drop trigger if exists _900_outbox on weld_public.hardness_readings;
create constraint trigger _900_outbox after insert or delete or update on weld_public.hardness_readings
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('hardness_reading');
drop trigger if exists _900_outbox on weld_public.components;
create constraint trigger _900_outbox after insert or delete or update on weld_public.components
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('component');
drop trigger if exists _900_outbox on weld_public.filler_lots;
create constraint trigger _900_outbox after insert or delete or update on weld_public.filler_lots
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('filler_lot');
drop trigger if exists _900_outbox on weld_public.weld_fillers;
create constraint trigger _900_outbox after insert or delete or update on weld_public.weld_fillers
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('weld_filler');
drop trigger if exists _900_outbox on weld_public.punch_items;
create constraint trigger _900_outbox after insert or delete or update on weld_public.punch_items
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('punch_item');
drop trigger if exists _900_outbox on weld_public.weld_repairs;
create constraint trigger _900_outbox after insert or delete or update on weld_public.weld_repairs
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('weld_repair');
drop trigger if exists _900_outbox on weld_public.attachments;
create constraint trigger _900_outbox after insert or delete or update on weld_public.attachments
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('attachment');
--! EndIncluded functions/weld_private.tg__outbox.sql
--! Included functions/weld_private.tg__hold_weld_records.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- WD008 for the records of a weld, as for its data (weld_private.tg_welds__package_open): while a
-- package holding the weld is released, tested or closed, its PWHT records (their values and
-- welds), hardness readings, fillers, repairs and the components it joins are the record of
-- what was judged, and are not changed or deleted. A new record is still taken (a hardness
-- reading found later is a fact, and the package's readiness then names it), and so is a
-- repair's welding recorded for the first time; a PWHT record touched because a weld was added
-- to it (updated_at, version) is no change of its values. Requests only.
create or replace function weld_private.tg__hold_weld_records() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  weld_ids uuid[];
  package record;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  case tg_table_name
    when 'pwht_records' then
      weld_ids := array(
        select l.weld_id
          from new_rows n
          join old_rows o on o.id = n.id
          join weld_public.pwht_record_welds l on l.tenant_id = n.tenant_id and l.pwht_record_id = n.id
         where (n.record_number, n.treated_on, n.holding_temperature_f, n.hold_minutes,
                n.heating_rate_f_per_h, n.cooling_rate_f_per_h, n.chart_ref)
               is distinct from (o.record_number, o.treated_on, o.holding_temperature_f, o.hold_minutes,
                                 o.heating_rate_f_per_h, o.cooling_rate_f_per_h, o.chart_ref));
    when 'components' then
      weld_ids := array(
        select w.id
          from new_rows n
          join old_rows o on o.id = n.id
          join weld_public.welds w
            on w.tenant_id = n.tenant_id and (w.component_1_id = n.id or w.component_2_id = n.id)
         where (n.tag, n.kind, n.description, n.material_spec, n.grade, n.p_number, n.group_number,
                n.size, n.schedule, n.heat_number, n.mtr_ref)
               is distinct from (o.tag, o.kind, o.description, o.material_spec, o.grade, o.p_number,
                                 o.group_number, o.size, o.schedule, o.heat_number, o.mtr_ref));
    when 'weld_repairs' then
      -- A repair's welding recorded for the first time is a fact taken (as a new record is);
      -- what was recorded changes only while the weld's packages are open.
      weld_ids := array(
        select n.weld_id
          from new_rows n
          join old_rows o on o.id = n.id
         where (o.welded_on is not null and n.welded_on is distinct from o.welded_on)
            or (o.welder_id is not null and n.welder_id is distinct from o.welder_id)
            or (o.wps_id is not null and n.wps_id is distinct from o.wps_id)
            or (o.preheat_f is not null and n.preheat_f is distinct from o.preheat_f));
    else
      -- pwht_record_welds, hardness_readings, weld_fillers: the welds of the rows written.
      if tg_op = 'DELETE' then
        weld_ids := array(select o.weld_id from old_rows o);
      else
        weld_ids := array(select n.weld_id from new_rows n union select o.weld_id from old_rows o);
      end if;
  end case;
  if coalesce(cardinality(weld_ids), 0) = 0 then
    return null;
  end if;
  -- The packages' locks first (as every guard takes them): a release in flight is waited for,
  -- and its state then read as committed.
  perform weld_private.lock_packages_of(weld_ids);
  select p.package_number, p.state into package
    from weld_public.test_packages p
   where p.tenant_id = weld_hidden.current_tenant_id() and p.state <> 'open'
     and (exists (select from weld_public.test_package_welds l
                   where l.tenant_id = p.tenant_id and l.test_package_id = p.id and l.weld_id = any(weld_ids))
          or exists (select from weld_public.test_package_isos l
                       join weld_public.welds w on w.tenant_id = l.tenant_id and w.iso_id = l.iso_id
                      where l.tenant_id = p.tenant_id and l.test_package_id = p.id and w.id = any(weld_ids)))
   order by p.package_number
   limit 1;
  if found then
    raise exception 'test package % is %; the records of its welds change only while it is open',
      package.package_number, package.state
      using errcode = 'WD008';
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _700_hold_update after update on weld_public.pwht_records
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_delete after delete on weld_public.pwht_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_update after update on weld_public.hardness_readings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_delete after delete on weld_public.hardness_readings
  referencing old table as old_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_update after update on weld_public.weld_fillers
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_delete after delete on weld_public.weld_fillers
  referencing old table as old_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_update after update on weld_public.components
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_update after update on weld_public.weld_repairs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
--! EndIncluded functions/weld_private.tg__hold_weld_records.sql
--! Included functions/weld_private.tg__report_stale.sql
-- Keeps the cached reports (examination progress, the test package board, qualification expiry)
-- honest: every write to what they are computed from notes, in its own transaction, what it
-- changed (weld_private.mark_report_stale), naming only rows it wrote: which lots, packages and
-- welders that touches is worked out when the notes are read (weld_private.report_stale_parts),
-- in the reader's snapshot, so a write racing another (an ISO moved to another line while a weld
-- on it is examined) cannot be noted under a key the other made stale. The kinds:
--
-- - 'line': a line's lots (an ISO's line, RT percent or fluid service changed; its old and new line);
-- - 'iso': what a package holding the ISO reads of its welds (any field of any of them);
-- - 'lot_iso': that, and the lots of the ISO's line (a weld made, deleted, moved, retyped, its
--   welder or date or VOIDED-ness changed);
-- - 'weld': a weld's selections, examinations, PWHT records, hardness readings, fillers or
--   repairs changed (its ISO's lots and packages; a repair also notes its welder);
-- - 'record': an NDT record's, film interval's, inspection's or PWHT record's method, date, result
--   or values changed, or a filler lot's (the welds it covers, or made);
-- - 'package': a package's members; 'wps', 'pqr': what a WPS or PQR says (the packages with welds
--   to it, and the welders whose continuity or qualifications it carries);
-- - 'welder': a welder's qualifications, continuity, or welds' dates and WPSs; 'welder_lots': its
--   stamp, which names its lots;
-- - 'all': the tenant's rules and settings (examination, P-number, thickness, range and heat
--   treatment rules, settings), and a TRUNCATE (every tenant).
-- (The refresh notes what it leaves for its next call as 'lot_line', 'package', 'qual_welder':
-- lines and welders as kinds of their own, since a 'line' or 'welder' note also reaches packages,
-- which the refresh has already listed; a package reaches nothing further, so it stays 'package'.)
--
-- Statement triggers, reading the statement's rows from its transition tables: a bulk write notes
-- once per kind, not once per row.
create or replace function weld_private.tg__report_stale() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  pair record;
  -- The statement's rows: an insert has only new rows, a delete only old ones.
  changed text := case tg_op when 'INSERT' then 'select * from new_rows'
                             when 'DELETE' then 'select * from old_rows'
                             else 'select * from new_rows union all select * from old_rows' end;
begin
  if tg_op = 'TRUNCATE' then
    -- (A DBA's TRUNCATE fires no delete trigger: every tenant's reports are recomputed.)
    insert into weld_private.report_stale (tenant_id, kind, keys)
    select t.id, 'all', '{*}' from weld_public.tenants t;
    return null;
  end if;

  case tg_table_name
    when 'welds' then
      if tg_op = 'UPDATE' then
        -- Packages read every field; lots only some; a welder's continuity only what it chains.
        -- (Each side under its own tenant: a DBA's move of a weld to another tenant notes both.)
        for pair in
          select x.tenant_id,
                 array_agg(distinct x.iso_id::text) as isos,
                 array_agg(distinct x.iso_id::text) filter (
                   where (o.iso_id, o.type, o.welder_id, o.welded_on, o.status = 'VOIDED')
                         is distinct from (n.iso_id, n.type, n.welder_id, n.welded_on, n.status = 'VOIDED')
                 ) as lot_isos,
                 array_agg(distinct x.welder_id::text) filter (
                   where (o.welder_id, o.wps_id, o.welded_on, o.status = 'VOIDED')
                         is distinct from (n.welder_id, n.wps_id, n.welded_on, n.status = 'VOIDED')
                 ) as welders
            from new_rows n
            join old_rows o on o.id = n.id
            cross join lateral (values (o.tenant_id, o.iso_id, o.welder_id),
                                       (n.tenant_id, n.iso_id, n.welder_id)) as x (tenant_id, iso_id, welder_id)
           group by x.tenant_id
        loop
          perform weld_private.mark_report_stale(pair.tenant_id, 'iso', pair.isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'lot_iso', pair.lot_isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        end loop;
      else
        -- Made or deleted.
        for pair in execute format(
          'select r.tenant_id, array_agg(distinct r.iso_id::text) as isos,
                  array_agg(distinct r.welder_id::text) as welders
             from (%s) r group by r.tenant_id', changed)
        loop
          perform weld_private.mark_report_stale(pair.tenant_id, 'lot_iso', pair.isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        end loop;
      end if;
    when 'isos' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as isos,
                array_agg(distinct r.line_number) as lines
           from (%s) r group by r.tenant_id', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'iso', pair.isos);
        perform weld_private.mark_report_stale(pair.tenant_id, 'line', pair.lines);
      end loop;
    when 'examination_selections', 'ndt_record_welds', 'film_interval_welds', 'inspection_welds',
         'weld_reexaminations', 'pwht_record_welds', 'hardness_readings', 'weld_fillers' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.weld_id::text) as welds from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'weld', pair.welds);
      end loop;
    when 'weld_repairs' then
      -- A repair's welding: its weld's checks, and the continuity of who welded it.
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.weld_id::text) as welds,
                array_agg(distinct r.welder_id::text) filter (where r.welder_id is not null) as welders
           from (%s) r group by r.tenant_id', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'weld', pair.welds);
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
      end loop;
    when 'ndt_records', 'film_intervals', 'inspections', 'pwht_records', 'filler_lots' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as ids from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'record', pair.ids);
      end loop;
    when 'test_packages', 'test_package_welds', 'test_package_isos', 'punch_items' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.%I::text) as packages from (%s) r group by r.tenant_id',
        case tg_table_name when 'test_packages' then 'id' else 'test_package_id' end, changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'package', pair.packages);
      end loop;
    when 'wps', 'wps_pqrs' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.%I::text) as wps from (%s) r group by r.tenant_id',
        case tg_table_name when 'wps' then 'id' else 'wps_id' end, changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'wps', pair.wps);
      end loop;
    when 'pqrs' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as ids from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'pqr', pair.ids);
      end loop;
    when 'welder_qualifications', 'welder_continuity' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.welder_id::text) as welders
           from (%s) r group by r.tenant_id', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
      end loop;
    when 'welders' then
      -- (Updates only.) Its qualifications' standing; and a new stamp names its lots.
      for pair in
        select n.tenant_id, array_agg(n.id::text) as welders,
               array_agg(n.id::text) filter (where o.stamp is distinct from n.stamp) as renamed
          from new_rows n join old_rows o on o.tenant_id = n.tenant_id and o.id = n.id
         group by n.tenant_id
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder_lots', pair.renamed);
      end loop;
    else
      -- The tenant's rules and settings: examination_rules, p_number_rules,
      -- procedure_thickness_rules, qualification_range_rules, heat_treatment_rules, preheat_rules,
      -- heat_treatment_exemptions, tenant_settings.
      for pair in execute format('select distinct r.tenant_id from (%s) r', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'all', '{*}');
      end loop;
  end case;
  return null;
end
$$;

-- Per statement: each table's inserts, updates and deletes that can change what the reports read
-- (an ISO's insert cannot, nor a record's before its welds are linked), and its TRUNCATE.
create or replace trigger _520_report_stale_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.isos
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.isos
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.isos
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.examination_selections
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.examination_selections
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.examination_selections
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.examination_selections
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.ndt_record_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.ndt_record_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.ndt_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.ndt_record_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.film_interval_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.film_interval_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.film_interval_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.film_interval_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.inspection_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.inspection_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.inspection_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.inspection_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.weld_reexaminations
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.weld_reexaminations
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.weld_reexaminations
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.weld_reexaminations
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.ndt_records
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.ndt_records
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.film_intervals
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.film_intervals
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.inspections
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.inspections
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_packages
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_packages
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_package_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.test_package_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.test_package_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_package_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_package_isos
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.test_package_isos
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.test_package_isos
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_package_isos
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.wps
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.wps
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.wps_pqrs
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.wps_pqrs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.wps_pqrs
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.wps_pqrs
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.pqrs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.pqrs
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.welder_qualifications
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welder_qualifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welder_qualifications
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welder_qualifications
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.welder_continuity
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welder_continuity
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welder_continuity
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welder_continuity
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welders
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welders
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.examination_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.examination_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.examination_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.examination_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.p_number_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.p_number_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.p_number_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.p_number_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.procedure_thickness_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.procedure_thickness_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.procedure_thickness_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.procedure_thickness_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.qualification_range_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.qualification_range_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.qualification_range_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.qualification_range_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.tenant_settings
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.tenant_settings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.tenant_settings
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.tenant_settings
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.pwht_record_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.pwht_record_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.pwht_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.pwht_record_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.hardness_readings
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.hardness_readings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.hardness_readings
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.hardness_readings
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.pwht_records
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.pwht_records
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.heat_treatment_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.heat_treatment_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.heat_treatment_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.heat_treatment_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.weld_fillers
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.weld_fillers
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.weld_fillers
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.weld_fillers
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.filler_lots
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.filler_lots
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.punch_items
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.punch_items
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.punch_items
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.punch_items
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.weld_repairs
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.weld_repairs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.weld_repairs
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.weld_repairs
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.preheat_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.preheat_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.preheat_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.preheat_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.heat_treatment_exemptions
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.heat_treatment_exemptions
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.heat_treatment_exemptions
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.heat_treatment_exemptions
  for each statement execute function weld_private.tg__report_stale();
--! EndIncluded functions/weld_private.tg__report_stale.sql
--! Included functions/weld_private.clear_tenant.sql
-- Empties a tenant for `weld-admin tenant remove` and `tenant reset` (F18): every row of every
-- table with a tenant_id (whole = true, then the tenant itself), or, for a reset, every row but
-- the tenant's setup: its origins, users and their credentials and sessions, signing keys,
-- settings, rule tables, webhook endpoints, OAuth2 clients and reporting logins. A table added
-- later is data unless it is named here, so a reset never leaves project rows behind.
--
-- Why triggers are off: the rules refuse what a removal must do (a released package's records are
-- held, welds hold their ISO by RESTRICT, history is append-only) and each deleted row would write
-- an event. The caller runs it with session_replication_role = replica for its transaction, so no
-- trigger fires, the foreign keys' own included; that is safe because every row of the tenant
-- goes, and nothing of another tenant refers to it (every key leads with tenant_id). Only a
-- superuser may set that: weld-admin sets it on the root connection and calls this, which runs as
-- its owner (SECURITY DEFINER, where PostgreSQL refuses SET ROLE), so that the superuser runs no
-- code with its own rights that the owner could have rewritten.
--
-- Writes of the tenant in flight: the tenant's row is locked first (FOR UPDATE waits for every
-- transaction that wrote a row naming the tenant, and holds back any new one), and a last pass
-- finds every table empty of the tenant (or of its data), else nothing is deleted.
--
-- A removal announces the end of the tenant's live sessions (as the revocation trigger would),
-- so every server drops their access tokens at once. Returns the rows deleted per table, the
-- tables with none left out.
create or replace function weld_private.clear_tenant(tenant uuid, whole boolean)
  returns table (table_name text, deleted bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  setup constant text[] := array[
    'weld_private.tenant_origins', 'weld_public.users', 'weld_private.user_credentials',
    'weld_private.sessions', 'weld_private.refresh_tokens', 'weld_private.known_addresses',
    'weld_private.login_throttle', 'weld_private.signing_keys', 'weld_private.tenant_secrets',
    'weld_private.reporting_logins', 'weld_private.oauth_clients', 'weld_public.tenant_settings',
    'weld_public.weld_transition_rules', 'weld_public.examination_rules',
    'weld_public.qualification_range_rules', 'weld_public.procedure_thickness_rules',
    'weld_public.p_number_rules', 'weld_public.heat_treatment_rules', 'weld_public.preheat_rules',
    'weld_public.heat_treatment_exemptions',
    'weld_private.report_refreshes', 'weld_hidden.webhooks',
    -- (Kept, so that the housekeeping removes them from the store: unreferenced once the
    -- attachments are gone, an hour after they were put.)
    'weld_hidden.attachment_files'];
  tables regclass[];
  tbl regclass;
  count bigint;
  left_over boolean;
  files text[];
begin
  if current_setting('session_replication_role') <> 'replica' then
    raise exception 'clear_tenant runs with session_replication_role = replica (weld-admin tenant remove or reset)'
      using errcode = '55000';
  end if;
  perform from weld_public.tenants t where t.id = tenant for update;
  if not found then
    raise exception 'no tenant %', tenant using errcode = 'WD001';
  end if;
  if whole then
    perform pg_notify('weld_session_revoked', json_build_object(
              'tenantId', s.tenant_id, 'sessionId', s.id, 'userId', s.user_id)::text)
       from weld_private.sessions s
      where s.tenant_id = tenant and s.revoked_at is null;
  end if;

  select array_agg(c.oid::regclass order by c.oid::regclass::text) into tables
    from pg_catalog.pg_class c
    join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id'
                                   and not a.attisdropped
   where n.nspname in ('weld_public', 'weld_hidden', 'weld_private')
     and c.relkind in ('r', 'p')
     and (whole or c.oid::regclass::text <> all (setup));
  -- Its files in the store, for the housekeeping to remove once the rows are gone (nothing can
  -- put them again: the tenant is gone).
  files := array(select f.sha256 from weld_hidden.attachment_files f where f.tenant_id = tenant);
  foreach tbl in array tables loop
    execute format('delete from %s where tenant_id = $1', tbl) using tenant;
    get diagnostics count = row_count;
    if count > 0 then
      table_name := tbl::text;
      deleted := count;
      return next;
    end if;
  end loop;
  foreach tbl in array tables loop
    execute format('select exists (select from %s where tenant_id = $1)', tbl) into left_over
      using tenant;
    if left_over then
      raise exception 'rows of the tenant were written in % while it was being emptied; nothing was deleted: run it again', tbl
        using errcode = '40001';
    end if;
  end loop;
  if whole then
    insert into weld_private.attachment_files_left (tenant_id, sha256)
    select tenant, f from unnest(files) f
        on conflict do nothing;
    delete from weld_public.tenants t where t.id = tenant;
    table_name := 'weld_public.tenants';
    deleted := 1;
    return next;
  end if;
end
$$;

comment on function weld_private.clear_tenant(uuid, boolean) is
  'Deletes a tenant''s data (whole: everything, and the tenant) in a transaction with triggers off (session_replication_role = replica, set by weld-admin as a superuser).';
--! EndIncluded functions/weld_private.clear_tenant.sql
--! Included functions/weld_hidden.test_package_dossier.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- What the turnover dossier of a test package says (GET /test-packages/{id}/dossier renders it,
-- rest-adapter/dossier.ts): one JSON document of the package, its ISOs, its weld log (welder, WPS,
-- dates, status and how it was accepted, repair cycles with each repair's welding, examinations,
-- the welder's qualifications in force on the day it was welded, PWHT and hardness), the NDT lots
-- per method against what was required, its punch list, its readiness and its last release, and
-- the files attached to any of them.
--
-- Only a package that was released (released, tested or closed: WD008) is handed over, and only
-- engineers and admins hand it over (WD003). A null: no such package in the caller's tenant.
-- Welds VOIDED drop out, as from readiness. Every list is in a fixed order, so the same package
-- gives the same document (the dossier is reproducible).
create or replace function weld_hidden.test_package_dossier(package_id uuid) returns jsonb
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
as $$
declare
  package weld_public.test_packages;
  result jsonb;
begin
  perform weld_private.require_role('engineer', 'the turnover dossier');
  perform weld_hidden.require_scope('{welds:read,welds:write,ndt:write,packages:write,imports:write}');
  select * into package from weld_public.test_packages p
   where p.tenant_id = weld_hidden.current_tenant_id() and p.id = package_id;
  if not found then
    return null;
  end if;
  if package.state = 'open' then
    raise exception 'test package % is open: a dossier is of a released package (release it when ready)',
      package.package_number using errcode = 'WD008';
  end if;

  with members as (
    select pw.weld_id from weld_public.test_package_welds pw
     where pw.tenant_id = package.tenant_id and pw.test_package_id = package.id
    union
    select w.id
      from weld_public.test_package_isos pi
      join weld_public.welds w on w.tenant_id = pi.tenant_id and w.iso_id = pi.iso_id
     where pi.tenant_id = package.tenant_id and pi.test_package_id = package.id
  ), w as (
    select w.*, i.iso_number, i.line_number
      from members m
      join weld_public.welds w on w.tenant_id = package.tenant_id and w.id = m.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where w.status <> 'VOIDED'
  ), iso_ids as (
    select w.iso_id as id from w
    union
    select pi.iso_id from weld_public.test_package_isos pi
     where pi.tenant_id = package.tenant_id and pi.test_package_id = package.id
  ), weld_log as (
    select w.id, w.iso_id, w.iso_number, w.weld_number, jsonb_build_object(
             'weldNumber', w.weld_number, 'isoNumber', w.iso_number, 'type', w.type,
             'size', trim_scale(w.size)::text || '"'
                     || case when w.schedule is not null then ' sch ' || w.schedule else '' end,
             'welder', s.stamp, 'wps', p.wps_number || ' rev ' || p.revision,
             'weldedOn', w.welded_on::text, 'status', w.status, 'repairCycles', w.repair_cycle,
             'acceptance', weld_public.welds_acceptance(
               (select x from weld_public.welds x where x.tenant_id = w.tenant_id and x.id = w.id)),
             'repairs', array(
               select format('repair %s: welded %s by %s, WPS %s%s', p.repair_cycle,
                             coalesce(p.welded_on::text, '(date not recorded)'),
                             coalesce(rw.stamp, '(welder not recorded)'),
                             coalesce(rp.wps_number || ' rev ' || rp.revision, 'of the weld'),
                             coalesce(', preheat ' || p.preheat_f || ' °F', ''))
                 from weld_public.weld_repairs p
                 left join weld_public.welders rw on rw.tenant_id = p.tenant_id and rw.id = p.welder_id
                 left join weld_public.wps rp on rp.tenant_id = p.tenant_id and rp.id = p.wps_id
                where p.tenant_id = w.tenant_id and p.weld_id = w.id and p.rewelded_at is not null
                order by p.repair_cycle),
             'examinations', array(
               select e.method || ' ' || e.examined_on || ' ' || e.result
                      || case when e.record is not null then ' (' || e.record || ')' else '' end
                 from weld_private.weld_examinations e
                where e.tenant_id = w.tenant_id and e.weld_id = w.id
                order by e.examined_on, e.method, e.record, e.result),
             'qualifications', array(
               select coalesce(q.process, qp.wps_number || ' rev ' || qp.revision, 'WPS') || ' '
                      || q.joint || ', qualified ' || q.qualified_on
                      || coalesce(' to ' || q.expires_on, '')
                 from weld_public.welder_qualifications q
                 left join weld_public.wps qp on qp.tenant_id = q.tenant_id and qp.id = q.wps_id
                where q.tenant_id = w.tenant_id and q.welder_id = w.welder_id
                  and w.welded_on is not null and q.qualified_on <= w.welded_on
                  and (q.expires_on is null or q.expires_on >= w.welded_on)
                  and (q.revoked_on is null or q.revoked_on > w.welded_on)
                order by q.qualified_on, q.process, q.id),
             'pwht', (select string_agg(r.record_number || ' ' || r.treated_on || ', '
                                        || trim_scale(r.holding_temperature_f) || ' °F, '
                                        || r.hold_minutes || ' min', '; '
                                        order by r.treated_on, r.record_number)
                        from weld_public.pwht_record_welds l
                        join weld_public.pwht_records r on r.tenant_id = l.tenant_id and r.id = l.pwht_record_id
                       where l.tenant_id = w.tenant_id and l.weld_id = w.id),
             'hardness', (select string_agg('HB ' || trim_scale(h.hardness_hb) || ' ' || h.measured_on
                                            || coalesce(' ' || h.location, ''), '; '
                                            order by h.measured_on, h.id)
                            from weld_public.hardness_readings h
                           where h.tenant_id = w.tenant_id and h.weld_id = w.id)
           ) as entry
      from w
      left join weld_public.welders s on s.tenant_id = w.tenant_id and s.id = w.welder_id
      left join weld_public.wps p on p.tenant_id = w.tenant_id and p.id = w.wps_id
  ), lots as (
    select l.* from weld_private.lot_status(
      weld_private.rule_methods(), array(select distinct w.line_number from w), array(select w.id from w)) l
  ), punch as (
    select i.*, r.user_name as raised_by_name, c.user_name as closed_by_name
      from weld_public.punch_items i
      left join weld_public.users r on r.tenant_id = i.tenant_id and r.id = i.raised_by
      left join weld_public.users c on c.tenant_id = i.tenant_id and c.id = i.closed_by
     where i.tenant_id = package.tenant_id and i.test_package_id = package.id
  ), released as (
    select h.changed_at, u.user_name
      from weld_public.test_package_state_changes h
      left join weld_public.users u on u.tenant_id = h.tenant_id and u.id = h.changed_by
     where h.tenant_id = package.tenant_id and h.test_package_id = package.id and h.to_state = 'released'
     order by h.changed_at desc, h.id desc
     limit 1
  ), files as (
    -- The files of the package, its ISOs, welds, their examinations, its punch items, and the
    -- WPSs, PQRs and qualifications its welds were made under.
    select a.*, case
             when a.test_package_id is not null then 'test package ' || package.package_number
             when a.iso_id is not null then 'ISO ' || (select i.iso_number from weld_public.isos i
                                                        where i.tenant_id = a.tenant_id and i.id = a.iso_id)
             when a.weld_id is not null then (select 'weld ' || l.weld_number || ' on ISO ' || l.iso_number
                                                from weld_log l where l.id = a.weld_id)
             when a.ndt_record_id is not null then (select r.method || ' report ' || r.report_number
                                                      from weld_public.ndt_records r
                                                     where r.tenant_id = a.tenant_id and r.id = a.ndt_record_id)
             when a.inspection_id is not null then (select r.kind || ' inspection of ' || r.inspected_on
                                                      from weld_public.inspections r
                                                     where r.tenant_id = a.tenant_id and r.id = a.inspection_id)
             when a.punch_item_id is not null then 'punch item ' || (select p.item_number from punch p where p.id = a.punch_item_id)
             when a.wps_id is not null then 'WPS ' || (select p.wps_number || ' rev ' || p.revision from weld_public.wps p
                                                       where p.tenant_id = a.tenant_id and p.id = a.wps_id)
             when a.pqr_id is not null then 'PQR ' || (select p.pqr_number from weld_public.pqrs p
                                                       where p.tenant_id = a.tenant_id and p.id = a.pqr_id)
             else 'welder qualification of ' || (select s.stamp from weld_public.welder_qualifications q
                                                   join weld_public.welders s on s.tenant_id = q.tenant_id and s.id = q.welder_id
                                                  where q.tenant_id = a.tenant_id and q.id = a.welder_qualification_id)
           end as attached_to
      from weld_public.attachments a
     where a.tenant_id = package.tenant_id
       and (a.test_package_id = package.id
            or a.iso_id in (select id from iso_ids)
            or a.weld_id in (select w.id from w)
            or a.ndt_record_id in (select l.ndt_record_id from weld_public.ndt_record_welds l
                                    where l.tenant_id = package.tenant_id and l.weld_id in (select w.id from w))
            or a.inspection_id in (select l.inspection_id from weld_public.inspection_welds l
                                    where l.tenant_id = package.tenant_id and l.weld_id in (select w.id from w))
            or a.punch_item_id in (select p.id from punch p)
            or a.wps_id in (select w.wps_id from w)
            or a.pqr_id in (select x.pqr_id from weld_public.wps_pqrs x
                             where x.tenant_id = package.tenant_id and x.wps_id in (select w.wps_id from w))
            or a.welder_qualification_id in (
                 select q.id from weld_public.welder_qualifications q
                  where q.tenant_id = package.tenant_id and q.welder_id in (select w.welder_id from w)))
  )
  select jsonb_build_object(
    'tenantName', (select t.name from weld_public.tenants t where t.id = package.tenant_id),
    'package', jsonb_build_object(
      'packageNumber', package.package_number, 'state', package.state,
      'testMedium', package.test_medium, 'testPressurePsig', package.test_pressure_psig::float8,
      'releasedAt', (select to_char(r.changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') from released r),
      'releasedBy', (select r.user_name from released r)),
    'readiness', (select jsonb_build_object(
                           'ready', count(*) = 0,
                           'reasons', coalesce(jsonb_agg(jsonb_build_object('code', x.code, 'detail', x.detail)
                                                         order by x.n), '[]'))
                    from weld_public.test_packages_readiness_reasons(package)
                         with ordinality as x (code, weld_id, iso_id, detail, n)),
    'isos', coalesce((select jsonb_agg(jsonb_build_object(
                               'isoNumber', i.iso_number, 'revision', i.revision, 'lineNumber', i.line_number,
                               'pipingClass', i.piping_class, 'fluidService', i.fluid_service,
                               'welds', (select count(*) from w where w.iso_id = i.id)) order by i.iso_number)
                        from weld_public.isos i
                       where i.tenant_id = package.tenant_id and i.id in (select id from iso_ids)), '[]'),
    'welds', coalesce((select jsonb_agg(l.entry order by l.iso_number, l.weld_number, l.id) from weld_log l), '[]'),
    'ndtSummary', coalesce((select jsonb_agg(jsonb_build_object(
                                     'method', m.method, 'lots', m.lots, 'required', m.required,
                                     'examined', m.examined,
                                     'note', case when m.shortfall > 0 then m.shortfall || ' more to examine' end)
                                   order by m.method)
                              from (select l.method, count(*)::integer as lots, sum(l.required)::integer as required,
                                           sum(l.examined)::integer as examined, sum(l.shortfall)::integer as shortfall
                                      from lots l group by l.method) m), '[]'),
    'punchItems', coalesce((select jsonb_agg(jsonb_build_object(
                                     'itemNumber', p.item_number, 'category', p.category,
                                     'description', p.description, 'raisedBy', p.raised_by_name,
                                     'raisedOn', p.raised_on::text, 'closedOn', p.closed_on::text,
                                     'closedBy', p.closed_by_name) order by p.item_number)
                              from punch p), '[]'),
    'attachments', coalesce((select jsonb_agg(jsonb_build_object(
                                      'id', f.id, 'fileName', f.file_name, 'contentType', f.content_type,
                                      'sizeBytes', f.size_bytes, 'sha256', f.sha256, 'attachedTo', f.attached_to)
                                    order by f.attached_to, f.file_name, f.sha256, f.id)
                               from files f), '[]'))
    into result;
  return result;
end
$$;

comment on function weld_hidden.test_package_dossier(uuid) is
  'The turnover dossier of a released test package, as JSON (engineers and admins).';
grant execute on function weld_hidden.test_package_dossier(uuid) to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.test_package_dossier.sql
--! Included functions/weld_hidden.begin_weld_import.sql
-- Owned by weld_rules where it may create temporary tables (migration 000018 moved it there),
-- by the owner elsewhere: it is written as its owner.
grant create on schema weld_hidden to weld_rules;
do $$
begin
  if pg_catalog.pg_get_userbyid((select p.proowner from pg_catalog.pg_proc p
                                  where p.oid = 'weld_hidden.begin_weld_import()'::regprocedure))
     = 'weld_rules' then
    execute 'set role weld_rules';
  end if;
end
$$;

create or replace function weld_hidden.begin_weld_import() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.require_role('engineer', 'importing welds');
  -- The import writes the events of its changes itself (emit_weld_import_events), in one
  -- statement: this marks the transaction, so the outbox triggers neither queue nor write them.
  create temporary table if not exists weld_bulk_evented () on commit drop;
  drop table if exists pg_temp.weld_import_rows, pg_temp.weld_import_plan,
    pg_temp.weld_import_errors, pg_temp.weld_import_created;
  create temporary table weld_import_rows (
    line           integer not null,
    iso_number     text not null,
    line_number    text not null,
    weld_number    text not null,
    type           text not null,
    size           text not null,
    schedule       text not null,
    wall_thickness text not null,
    material       text not null,
    welder_stamp   text not null,
    wps_number     text not null,
    wps_revision   text not null,
    welded_on      text not null,
    base_metal_1   text not null,
    base_metal_2   text not null,
    preheat_f      text not null,
    version        text not null
  ) on commit drop;
  create temporary table weld_import_plan (
    line             integer primary key,
    -- As given (trimmed; null when empty)
    iso_number       text,
    weld_number      text,
    line_number      text,
    type_text        text,
    size_text        text,
    schedule_text    text,
    wall_text        text,
    material         text,
    welder_stamp     text,
    wps_number       text,
    wps_revision     text,
    welded_on_text   text,
    base_metal_1_text text,
    base_metal_2_text text,
    preheat_text     text,
    version_text     text,
    -- What they name
    iso_id           uuid,
    iso_line_number  text,
    new_iso_line     text,  -- the line number a new ISO is created with
    weld_id          uuid,
    welder_id        uuid,
    wps_id           uuid,
    wps_matches      integer,
    wps_revisions    text,
    -- The weld as the import leaves it
    type             text,
    size             numeric,
    schedule         text,
    wall_thickness   numeric,
    welded_on        date,
    base_metal_1_p_number text,
    base_metal_2_p_number text,
    preheat_f        integer,
    -- The version the check read (the apply writes only over that one), and the file's own
    seen_version     integer,
    file_version     integer,
    check_id         uuid not null default gen_random_uuid(),
    action           text check (action in ('create', 'update', 'unchanged'))
  ) on commit drop;
  create temporary table weld_import_errors (
    line     integer not null,
    "column" text,
    value    text,
    detail   text not null
  ) on commit drop;
  -- What each line of the plan created (apply_weld_import), for the events.
  create temporary table weld_import_created (
    line       integer primary key,
    weld_id    uuid not null,
    new_iso_id uuid  -- the ISO the import created for it, if it did
  ) on commit drop;
  grant select, insert, update, delete, truncate
    on pg_temp.weld_import_rows, pg_temp.weld_import_plan, pg_temp.weld_import_errors,
       pg_temp.weld_import_created
    to weld_engineer;
end
$$;

grant execute on function weld_hidden.begin_weld_import() to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.begin_weld_import.sql
--! Included functions/weld_hidden.check_weld_import.sql
create or replace function weld_hidden.check_weld_import(
  present text[], decimal_comma boolean, max_errors integer
) returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  -- Every join here pairs tens of thousands of rows, some of them just written: a nested loop,
  -- which an estimate off by a little picks, would take hours; hash joins take seconds.
  set enable_nestloop = off
  -- Its sorts and hashes of 100,000 rows stay in memory (4 MB spilled them to disk).
  set work_mem = '64MB'
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  answer json;
begin
  -- Imports of a tenant take turns from here to their commit: the second checks what the first
  -- wrote, instead of both checking the same state and the second undoing the first.
  perform weld_hidden.lock_weld_imports();
  truncate pg_temp.weld_import_plan, pg_temp.weld_import_errors;

  -- Each row, trimmed, with the ISO, weld, welder and WPS it names, and the weld as the import
  -- would leave it: a given value where the file has the column (parsed where valid; invalid ones
  -- are errors below), the weld's own where it does not. One pass: this runs on 100,000 rows.
  insert into pg_temp.weld_import_plan (
    line, iso_number, weld_number, line_number, type_text, size_text, schedule_text, wall_text,
    material, welder_stamp, wps_number, wps_revision, welded_on_text, base_metal_1_text,
    base_metal_2_text, preheat_text, version_text, seen_version, file_version,
    iso_id, iso_line_number, new_iso_line, weld_id, welder_id, wps_id, wps_matches, wps_revisions,
    type, size, schedule, wall_thickness, welded_on, base_metal_1_p_number, base_metal_2_p_number,
    preheat_f, action)
  with given as (
    select r.line,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.iso_number), '')) as iso_number,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.weld_number), '')) as weld_number,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.line_number), '')) as line_number,
           upper(nullif(btrim(r.type), '')) as type_text,
           nullif(btrim(r.size), '') as size_text,
           upper(nullif(btrim(r.schedule), '')) as schedule_text,
           nullif(btrim(r.wall_thickness), '') as wall_text,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.material), '')) as material,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.welder_stamp), '')) as welder_stamp,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.wps_number), '')) as wps_number,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.wps_revision), '')) as wps_revision,
           nullif(btrim(r.welded_on), '') as welded_on_text,
           upper(nullif(btrim(r.base_metal_1), '')) as base_metal_1_text,
           upper(nullif(btrim(r.base_metal_2), '')) as base_metal_2_text,
           nullif(btrim(r.preheat_f), '') as preheat_text,
           nullif(btrim(r.version), '') as version_text
      from pg_temp.weld_import_rows r
  ), wanted_wps as (
    select distinct g.wps_number, g.wps_revision from given g where g.wps_number is not null
  ), found_wps as (
    select x.wps_number, x.wps_revision, count(p.id)::integer as matches,
           (array_agg(p.id))[1] as wps_id,
           string_agg(p.revision, ', ' order by p.revision) as revisions
      from wanted_wps x
      left join weld_public.wps p
        on p.tenant_id = tenant and p.wps_number = x.wps_number
       and (x.wps_revision is null or p.revision = x.wps_revision)
     group by x.wps_number, x.wps_revision
  ), resolved as (
    select g.*, i.id as iso_id, i.line_number as iso_line_number,
           -- A new ISO's line number: the first its rows give.
           case when i.id is null
                then first_value(g.line_number) over (
                       partition by g.iso_number order by g.line_number is null, g.line) end
             as new_iso_line,
           w.id as weld_id, wr.id as welder_id, fw.wps_id, fw.matches, fw.revisions,
           case when 'type' = any(present) then g.type_text else w.type end as final_type,
           case when 'size' = any(present) then weld_hidden.import_inches(g.size_text, decimal_comma)
                else w.size end as final_size,
           case when 'schedule' = any(present) then g.schedule_text else w.schedule end as final_schedule,
           case when 'wallThickness' = any(present)
                then weld_hidden.import_inches(g.wall_text, decimal_comma)
                else w.wall_thickness end as final_wall,
           case when 'material' = any(present) then g.material else w.material end as final_material,
           case when 'welderStamp' = any(present) then wr.id else w.welder_id end as final_welder,
           case when 'wpsNumber' = any(present) then fw.wps_id else w.wps_id end as final_wps,
           case when 'weldedOn' = any(present) then weld_hidden.import_date(g.welded_on_text)
                else w.welded_on end as final_welded_on,
           case when 'baseMetal1PNumber' = any(present) then g.base_metal_1_text
                else w.base_metal_1_p_number end as final_base_metal_1,
           case when 'baseMetal2PNumber' = any(present) then g.base_metal_2_text
                else w.base_metal_2_p_number end as final_base_metal_2,
           case when 'preheatF' = any(present)
                then case when g.preheat_text ~ '^[0-9]{1,4}$' then g.preheat_text::integer end
                else w.preheat_f end as final_preheat,
           w as existing
      from given g
      left join weld_public.isos i on i.tenant_id = tenant and i.iso_number = g.iso_number
      left join weld_public.welds w
        on w.tenant_id = tenant and w.iso_id = i.id and w.weld_number = g.weld_number
      left join weld_public.welders wr on wr.tenant_id = tenant and wr.stamp = g.welder_stamp
      left join found_wps fw
        on fw.wps_number = g.wps_number and fw.wps_revision is not distinct from g.wps_revision
  )
  select x.line, x.iso_number, x.weld_number, x.line_number, x.type_text, x.size_text,
         x.schedule_text, x.wall_text, x.final_material, x.welder_stamp, x.wps_number,
         x.wps_revision, x.welded_on_text, x.base_metal_1_text, x.base_metal_2_text,
         x.preheat_text, x.version_text, (x.existing).version,
         case when x.version_text ~ '^[0-9]{1,9}$' then x.version_text::integer end,
         x.iso_id, x.iso_line_number, x.new_iso_line, x.weld_id, x.final_welder, x.final_wps,
         x.matches, x.revisions,
         x.final_type, x.final_size, x.final_schedule, x.final_wall, x.final_welded_on,
         x.final_base_metal_1, x.final_base_metal_2, x.final_preheat,
         case when x.weld_id is null then 'create'
              when (x.final_type, x.final_size, x.final_schedule, x.final_wall, x.final_material,
                    x.final_welder, x.final_wps, x.final_welded_on, x.final_base_metal_1,
                    x.final_base_metal_2, x.final_preheat)
                   is not distinct from
                   ((x.existing).type, (x.existing).size, (x.existing).schedule,
                    (x.existing).wall_thickness, (x.existing).material, (x.existing).welder_id,
                    (x.existing).wps_id, (x.existing).welded_on, (x.existing).base_metal_1_p_number,
                    (x.existing).base_metal_2_p_number, (x.existing).preheat_f)
                then 'unchanged'
              else 'update' end
    from resolved x;

  -- The plan's statistics, so that what follows (and apply_weld_import) is planned for its real
  -- size: without them the planner guesses a few hundred rows and may scan it once per weld.
  perform weld_hidden.analyze_weld_import();

  -- What is wrong, by line and column. (Each check builds its error only where it fails, so a
  -- valid row costs thirteen NULLs, not thirteen rows.)
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select p.line, e ->> 0, e ->> 1, e ->> 2
    from pg_temp.weld_import_plan p
   cross join lateral unnest(array_remove(array[
     case when p.iso_number is null then jsonb_build_array('isoNumber', null, 'is required')
          when char_length(p.iso_number) > 100
            then jsonb_build_array('isoNumber', p.iso_number, 'is longer than 100 characters') end,
     case when p.weld_number is null then jsonb_build_array('weldNumber', null, 'is required')
          when char_length(p.weld_number) > 50
            then jsonb_build_array('weldNumber', p.weld_number, 'is longer than 50 characters') end,
     case when char_length(p.line_number) > 100
            then jsonb_build_array('lineNumber', p.line_number, 'is longer than 100 characters')
          when p.iso_id is not null and p.line_number <> p.iso_line_number
            then jsonb_build_array('lineNumber', p.line_number,
                   format('ISO %s is on line %s; an import does not move ISOs', p.iso_number, p.iso_line_number))
          when p.iso_id is null and p.iso_number is not null and p.new_iso_line is null
            then jsonb_build_array('lineNumber', null,
                   format('is required: ISO %s does not exist and is created by this import', p.iso_number))
          when p.iso_id is null and p.line_number <> p.new_iso_line
            then jsonb_build_array('lineNumber', p.line_number,
                   format('ISO %s is given line %s on an earlier line', p.iso_number, p.new_iso_line)) end,
     case when p.type_text is not null and p.type_text not in ('BW', 'SW', 'FW', 'BR', 'TW', 'MW', 'LW')
            then jsonb_build_array('type', p.type_text, 'must be one of BW, SW, FW, BR, TW, MW, LW')
          when p.type is null and (p.weld_id is null or 'type' = any(present))
            then jsonb_build_array('type', null, 'is required') end,
     case when p.size_text is not null and p.size is null
            then jsonb_build_array('size', p.size_text, 'must be a number of inches (NPS), such as 2 or 0.75')
          when p.size is not null and not (p.size > 0 and p.size <= 999.999)
            then jsonb_build_array('size', p.size_text, 'must be more than 0 and at most 999.999')
          when p.size is null and (p.weld_id is null or 'size' = any(present))
            then jsonb_build_array('size', null, 'is required') end,
     case when p.schedule_text !~ '^(5S|10S|40S|80S|160S|STD|XS|XXS|[0-9]{1,3})$'
            then jsonb_build_array('schedule', p.schedule_text, 'must be a pipe schedule (40, 80, XS, 10S, ...)') end,
     case when p.wall_text is not null and p.wall_thickness is null
            then jsonb_build_array('wallThickness', p.wall_text, 'must be a number of inches, such as 0.154')
          when not (p.wall_thickness > 0 and p.wall_thickness <= 999.999)
            then jsonb_build_array('wallThickness', p.wall_text, 'must be more than 0 and at most 999.999') end,
     case when char_length(p.material) > 100
            then jsonb_build_array('material', p.material, 'is longer than 100 characters') end,
     case when p.welder_stamp is not null and p.welder_id is null
            then jsonb_build_array('welderStamp', p.welder_stamp, 'no welder has this stamp') end,
     case when p.wps_matches = 0 and p.wps_revision is null
            then jsonb_build_array('wpsNumber', p.wps_number, format('no WPS %s', p.wps_number))
          when p.wps_matches = 0
            then jsonb_build_array('wpsNumber', p.wps_number,
                   format('no WPS %s revision %s', p.wps_number, p.wps_revision))
          when p.wps_matches > 1
            then jsonb_build_array('wpsNumber', p.wps_number,
                   format('WPS %s has revisions %s: give wpsRevision', p.wps_number, p.wps_revisions)) end,
     case when p.wps_revision is not null and p.wps_number is null
            then jsonb_build_array('wpsRevision', p.wps_revision, 'needs a wpsNumber') end,
     case when p.welded_on_text is not null and p.welded_on is null
            then jsonb_build_array('weldedOn', p.welded_on_text,
                                   'must be a date, YYYY-MM-DD, from 1900-01-01 to 2200-12-31') end,
     case when p.base_metal_1_text !~ '^[0-9]{1,3}[A-Z]?$'
            then jsonb_build_array('baseMetal1PNumber', p.base_metal_1_text,
                                   'must be an ASME IX P-number: digits with an optional group letter (1, 5A, 15E)') end,
     case when p.base_metal_2_text !~ '^[0-9]{1,3}[A-Z]?$'
            then jsonb_build_array('baseMetal2PNumber', p.base_metal_2_text,
                                   'must be an ASME IX P-number: digits with an optional group letter (1, 5A, 15E)') end,
     case when p.preheat_text is not null and not coalesce(p.preheat_f between 0 and 1500, false)
            then jsonb_build_array('preheatF', p.preheat_text,
                                   'must be a whole number of degrees Fahrenheit, from 0 to 1500') end
   ], null)) as e;

  -- Records follow reality: a weld examined keeps a date welded no later than its examinations.
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select p.line, 'weldedOn', p.welded_on_text,
         case when p.welded_on is null
              then format('weld %s of ISO %s is covered by %s of %s: its date welded cannot be taken off',
                          p.weld_number, p.iso_number, e.record, e.examined_on)
              else format('weld %s of ISO %s is covered by %s of %s: it was welded on or before that day',
                          p.weld_number, p.iso_number, e.record, e.examined_on) end
    from pg_temp.weld_import_plan p
    cross join lateral (
      select x.record, x.examined_on
        from weld_hidden.weld_examinations_before(p.weld_id, p.welded_on) x) e
   where p.action = 'update' and 'weldedOn' = any(present)
     and (p.welded_on is not null or p.welded_on_text is null);

  -- A weld side that names a component has the component's P-number: the file may give it as it
  -- is, not another one, nor clear it (weld_private.tg_welds__component_p_numbers).
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select p.line, s.field, s.given,
         format('weld %s of ISO %s names component %s here, P-No. %s: a weld naming a component takes its P-number',
                p.weld_number, p.iso_number, c.tag, c.p_number)
    from pg_temp.weld_import_plan p
    join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
    cross join lateral (values ('baseMetal1PNumber', w.component_1_id, p.base_metal_1_p_number, p.base_metal_1_text),
                               ('baseMetal2PNumber', w.component_2_id, p.base_metal_2_p_number, p.base_metal_2_text))
         as s (field, component_id, final, given)
    join weld_public.components c on c.tenant_id = tenant and c.id = s.component_id
   where p.action = 'update' and s.field = any(present) and c.p_number is not null
     and s.final is distinct from c.p_number;

  -- A file that carries versions (an export, edited) changes only the welds still at the version
  -- it was exported at: a weld changed since is a conflict, never silently overwritten. Rows the
  -- import leaves unchanged are not judged (importing the same file twice changes nothing).
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select p.line, 'version', p.version_text,
         case when p.file_version is null
              then 'must be a whole number: the weld''s version, as the export wrote it (or empty)'
              else format('weld %s of ISO %s is at version %s, changed since this file''s version %s: '
                          'export it again, or empty this cell to overwrite',
                          p.weld_number, p.iso_number, p.seen_version, p.file_version) end
    from pg_temp.weld_import_plan p
   where 'version' = any(present) and p.version_text is not null
     and (p.file_version is null or (p.action = 'update' and p.file_version <> p.seen_version));

  -- The same weld twice: the later lines are wrong.
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select d.line, 'weldNumber', d.weld_number,
         format('weld %s of ISO %s is also on line %s', d.weld_number, d.iso_number, d.first_line)
    from (select p.line, p.iso_number, p.weld_number,
                 min(p.line) over (partition by p.iso_number, p.weld_number) as first_line
            from pg_temp.weld_import_plan p
           where p.iso_number is not null and p.weld_number is not null) d
   where d.line > d.first_line;

  -- The rules the database holds every write to, for the rows that would write: a weld of a test
  -- package that is not open keeps its data (WD008); in refuse mode, the code checks (WD010).
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select distinct on (p.line) p.line, null, null,
         format('test package %s is %s; the data of its welds changes only while it is open',
                t.package_number, t.state)
    from pg_temp.weld_import_plan p
    join weld_public.test_packages t on t.tenant_id = tenant and t.state <> 'open'
   where p.action in ('create', 'update')
     and (t.id in (select l.test_package_id from weld_public.test_package_isos l
                    where l.tenant_id = tenant and l.iso_id = p.iso_id)
          or t.id in (select l.test_package_id from weld_public.test_package_welds l
                       where l.tenant_id = tenant and l.weld_id = p.weld_id))
   order by p.line, t.package_number;

  if coalesce((select s.weld_checks from weld_public.tenant_settings s where s.tenant_id = tenant),
              'show') = 'refuse' then
    insert into pg_temp.weld_import_errors (line, "column", value, detail)
    select p.line, null, null, format('fails the code check %s: %s', c.code, c.detail)
      from weld_hidden.weld_import_code_problems(array(
             select jsonb_populate_record(null::weld_public.welds, jsonb_build_object(
                      'tenant_id', tenant, 'id', coalesce(p.weld_id, p.check_id), 'iso_id', p.iso_id,
                      'weld_number', p.weld_number, 'type', p.type, 'size', p.size,
                      'schedule', p.schedule, 'wall_thickness', p.wall_thickness,
                      'material', p.material, 'welder_id', p.welder_id, 'wps_id', p.wps_id,
                      'welded_on', p.welded_on, 'base_metal_1_p_number', p.base_metal_1_p_number,
                      'base_metal_2_p_number', p.base_metal_2_p_number, 'preheat_f', p.preheat_f,
                      'status', 'PENDING', 'repair_cycle', 0, 'version', 1))
               from pg_temp.weld_import_plan p
              where p.action in ('create', 'update'))) c
      join pg_temp.weld_import_plan p on coalesce(p.weld_id, p.check_id) = c.weld_id;
  end if;

  select json_build_object(
           'errors', coalesce((
             select json_agg(json_build_object('line', e.line, 'column', e."column",
                                               'value', left(e.value, 200), 'detail', e.detail)
                             order by e.line, e."column" nulls first, e.detail)
               from (select * from pg_temp.weld_import_errors
                      order by line, "column" nulls first, detail limit max_errors) e), '[]'::json),
           'errorCount', (select count(*) from pg_temp.weld_import_errors),
           'created', count(*) filter (where p.action = 'create'),
           'updated', count(*) filter (where p.action = 'update'),
           'unchanged', count(*) filter (where p.action = 'unchanged'),
           'isosCreated', count(distinct p.iso_number) filter (where p.iso_id is null))
    into answer
    from pg_temp.weld_import_plan p;
  return answer;
end
$$;

grant execute on function weld_hidden.check_weld_import(text[], boolean, integer) to weld_engineer;
--! EndIncluded functions/weld_hidden.check_weld_import.sql
--! Included functions/weld_hidden.apply_weld_import.sql
create or replace function weld_hidden.apply_weld_import(file_sha256 text, file_bytes bigint)
  returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set enable_nestloop = off -- as check_weld_import; the plan's statistics predate its new ids
  set work_mem = '64MB' -- its sorts and hashes of 100,000 rows stay in memory
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  done weld_hidden.imports;
  conflicts jsonb;
  conflict_count integer;
  created_count bigint;
begin
  if exists (select from pg_temp.weld_import_errors) then
    raise exception 'the import has errors' using errcode = 'WD007';
  end if;

  -- The welds it updates, locked in id order, as they are now. One whose version moved since the
  -- check (a PATCH in between) would get the values the check computed from the old one: a
  -- conflict, named by line, and nothing is written (WD014). Locked, none moves until the commit.
  perform from pg_temp.weld_import_plan p
    join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
   where p.action = 'update'
   order by w.id
     for update of w;
  -- (A statement of its own: the locks are all taken, and this one reads what they hold.)
  select count(*)::integer,
         jsonb_agg(x.error order by x.line) filter (where x.n <= 200)
    into conflict_count, conflicts
    from (select p.line, row_number() over (order by p.line) as n,
                 jsonb_build_object(
                   'line', p.line, 'column', null, 'value', null,
                   'detail', format('weld %s of ISO %s changed while the file was checked '
                                    '(version %s, now %s): upload the file again',
                                    p.weld_number, p.iso_number, p.seen_version, w.version)) as error
            from pg_temp.weld_import_plan p
            join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
           where p.action = 'update' and w.version <> p.seen_version) x;
  if conflict_count > 0 then
    raise exception '% weld% of the file changed while it was checked', conflict_count,
      case when conflict_count = 1 then '' else 's' end
      using errcode = 'WD014',
            detail = jsonb_build_object('errors', conflicts, 'errorCount', conflict_count)::text;
  end if;

  -- The welds it changes first: the statement below reads them back for their events.
  update weld_public.welds w
     set type = p.type, size = p.size, schedule = p.schedule, wall_thickness = p.wall_thickness,
         material = p.material, welder_id = p.welder_id, wps_id = p.wps_id, welded_on = p.welded_on,
         base_metal_1_p_number = p.base_metal_1_p_number,
         base_metal_2_p_number = p.base_metal_2_p_number, preheat_f = p.preheat_f
    from pg_temp.weld_import_plan p
   where p.action = 'update' and w.tenant_id = tenant and w.id = p.weld_id;

  -- The ISOs and welds it creates, in one statement, keeping what each line created (for the
  -- events) in a narrow table: writing the new ids back into the plan rewrote 100,000 wide rows.
  -- (The welds' foreign keys and statement triggers run at its end, and see the new ISOs.)
  with new_isos as (
    insert into weld_public.isos (iso_number, line_number)
    select distinct on (p.iso_number) p.iso_number, p.new_iso_line
      from pg_temp.weld_import_plan p
     where p.iso_id is null
     order by p.iso_number, p.line
    returning id, iso_number
  ), line_iso as (
    select p.line, p.weld_number, coalesce(p.iso_id, i.id) as iso_id, i.id as new_iso_id
      from pg_temp.weld_import_plan p
      left join new_isos i on p.iso_id is null and i.iso_number = p.iso_number
     where p.action = 'create'
  ), new_welds as (
    insert into weld_public.welds (iso_id, weld_number, type, size, schedule, wall_thickness,
                                   material, welder_id, wps_id, welded_on, base_metal_1_p_number,
                                   base_metal_2_p_number, preheat_f)
    select l.iso_id, p.weld_number, p.type, p.size, p.schedule, p.wall_thickness, p.material,
           p.welder_id, p.wps_id, p.welded_on, p.base_metal_1_p_number, p.base_metal_2_p_number,
           p.preheat_f
      from line_iso l
      join pg_temp.weld_import_plan p on p.line = l.line
    returning id, iso_id, weld_number
  )
  insert into pg_temp.weld_import_created (line, weld_id, new_iso_id)
  select l.line, w.id, l.new_iso_id
    from line_iso l
    join new_welds w on w.iso_id = l.iso_id and w.weld_number = l.weld_number;
  -- Every weld created has its line, or its event would be missing (the outbox stands down).
  get diagnostics created_count = row_count;
  if created_count <> (select count(*) from pg_temp.weld_import_plan p where p.action = 'create') then
    raise exception 'the import matched % created welds to their lines, of % planned', created_count,
      (select count(*) from pg_temp.weld_import_plan p where p.action = 'create');
  end if;

  perform weld_hidden.emit_weld_import_events();

  insert into weld_hidden.imports (kind, file_sha256, file_bytes, rows, created, updated,
                                   unchanged, isos_created)
  select 'welds', apply_weld_import.file_sha256, apply_weld_import.file_bytes, count(*),
         count(*) filter (where p.action = 'create'), count(*) filter (where p.action = 'update'),
         count(*) filter (where p.action = 'unchanged'),
         count(distinct p.iso_number) filter (where p.new_iso_line is not null)
    from pg_temp.weld_import_plan p
  returning * into done;
  return weld_hidden.import_json(done);
end
$$;

grant execute on function weld_hidden.apply_weld_import(text, bigint) to weld_engineer;
--! EndIncluded functions/weld_hidden.apply_weld_import.sql

------------------------------------------------------------------------------------------------
-- 10. What the data already holds, judged by the new rules. (Last: a row written queues the
--     tables' deferred triggers, and a table with queued events cannot be altered after it.)

-- The acceptances already made by an NDT result keep that record as their basis; the others
-- were made by hand with none recorded, and say so (acceptance null on an ACCEPTED weld).
update weld_public.welds w
   set acceptance_ndt_record_id = h.ndt_record_id
  from (select distinct on (x.tenant_id, x.weld_id) x.tenant_id, x.weld_id, x.ndt_record_id, x.to_status
          from weld_public.weld_status_history x
         order by x.tenant_id, x.weld_id, x.id desc) h
 where h.tenant_id = w.tenant_id and h.weld_id = w.id and w.status = 'ACCEPTED'
   and h.to_status = 'ACCEPTED' and h.ndt_record_id is not null;

-- Category D ISOs with the old default RT.
update weld_public.isos set rt_percent = 0 where fluid_service = 'category_d' and rt_percent = 5;

-- Every tenant gets the editions' rows (the new tables, and Table 331.1.1 of B31.3-2012).
select weld_private.seed_code_rules(t.id) from weld_public.tenants t;

-- A weld ACCEPTED while an examination of it was owed does not stay ACCEPTED: it goes back to
-- PENDING, by the system, with the reason in its history.
--! Included functions/weld_private.hold_owed_acceptances.sql
-- The acceptances of a tenant's welds that the lifecycle would have refused when they were made
-- (weld_public.change_weld_status, WD012), undone: each such weld goes back to PENDING, by the
-- system, with the reason in its history. An acceptance is refused while an examination of the
-- weld is owed, so a weld is put back when it is ACCEPTED and
--   - a repair of it still owes its re-examination (B31.3 341.3.3), or
--   - a selection of it, drawn before it was last accepted, is not yet examined (341.4.1): a
--     weld accepted first and drawn afterwards (a visual acceptance, then an RT lot) keeps its
--     acceptance, as the lifecycle lets it.
-- For data written before acceptances were judged so (the migration that brought the rule runs
-- it for every tenant), and for a DBA who loads welds with plain SQL. Returns the welds put back.
create or replace function weld_private.hold_owed_acceptances(tenant uuid)
  returns setof uuid
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  previous text := current_setting('jwt.claims.tenant_id', true);
  weld record;
begin
  -- The rules read the tenant from the request's claims.
  perform set_config('jwt.claims.tenant_id', tenant::text, true);
  for weld in
    select w.id, w.repair_cycle, h.detail
      from weld_public.welds w
      cross join lateral weld_private.acceptance_held(w.id) h
     where w.tenant_id = tenant and w.status = 'ACCEPTED'
       and (exists (select from weld_private.reexaminations_of(array[w.id]) r where r.met_by is null)
            or exists (
              select from weld_public.examination_selections s
               where s.tenant_id = tenant and s.weld_id = w.id
                 and s.selected_at < (select max(a.changed_at) from weld_public.weld_status_history a
                                       where a.tenant_id = tenant and a.weld_id = w.id
                                         and a.to_status = 'ACCEPTED')
                 and not exists (select from weld_private.selection_examination(s))))
     order by w.id
  loop
    update weld_public.welds w
       set status = 'PENDING'
     where w.tenant_id = tenant and w.id = weld.id;
    insert into weld_public.weld_status_history
      (tenant_id, weld_id, from_status, to_status, reason, changed_by, repair_cycle, cause)
    values
      (tenant, weld.id, 'ACCEPTED', 'PENDING', 'not accepted while ' || weld.detail, null,
       weld.repair_cycle, 'system');
    return next weld.id;
  end loop;
  perform set_config('jwt.claims.tenant_id', coalesce(previous, ''), true);
end
$$;

comment on function weld_private.hold_owed_acceptances(uuid) is
  'Puts back to PENDING (by the system, the reason in the history) each ACCEPTED weld of the tenant whose acceptance the lifecycle would have refused when it was made: a repair''s re-examination owed, or a selection drawn before the acceptance not yet examined. Returns the welds put back.';
--! EndIncluded functions/weld_private.hold_owed_acceptances.sql
select weld_private.hold_owed_acceptances(t.id) from weld_public.tenants t;

-- The repair rate's facts, counted afresh by the new definition.
select weld_private.refresh_report_facts(t.id, null) from weld_public.tenants t;
