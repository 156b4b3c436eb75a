--! Previous: sha1:3e7c5514db0d2b1042a93ca4b52f561b05fc2634
--! Hash: sha1:65095ef61c2f16e3b842a33aa893c94c8b31333f
--! Message: Examination progress reads every line

-- Issue F17. weld_reports.examination_progress gave lot_status no lines, and lot_status reads
-- only the lines it is given: the report had no rows. It now gives every line of the tenant.
--! Included functions/weld_hidden.report_examination_progress.sql
-- Examination progress (F17): per designated lot and method, what B31.3 341.4.1 asks and where it
-- stands, as an auditor checks it: the lot's candidate welds, how many the percent requires (at
-- least one weld of each welder), how many are drawn (selected, every tier), examined, accepted,
-- the shortfall, progressive selections still open, and the welders not yet represented.
-- The numbers are weld_private.lot_status's: the same ones the draw, the ISO's examination and a
-- test package's readiness use, so this report cannot disagree with them.
--
-- SECURITY DEFINER as weld_rules, which may use the rules' private functions: the reader needs
-- only EXECUTE (weld_viewer and the reporting logins have it); row security still applies, with
-- the reader's tenant. The view weld_reports.examination_progress is how readers see it.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.report_examination_progress()
  returns table (
    method text,
    lot text,
    lot_name text,
    percent float8,
    candidates integer,
    welders integer,
    required integer,
    drawn integer,
    examined integer,
    accepted integer,
    shortfall integer,
    progressive_open integer,
    welders_not_covered text[]
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select l.method, l.lot, l.lot_name, l.percent::float8 as percent, l.welds as candidates,
         l.welders, l.required, l.selected as drawn, l.examined, l.accepted, l.shortfall,
         l.progressive_open, l.stamps_not_covered as welders_not_covered
    -- Every line of the tenant (lot_status reads the lines it is given; none given, none read).
    from weld_private.lot_status(
           weld_private.rule_methods(),
           array(select distinct i.line_number from weld_public.isos i where i.line_number is not null),
           null) l
$$;

comment on function weld_hidden.report_examination_progress() is
  'Examination progress per lot and method: the rows of the view weld_reports.examination_progress.';

grant execute on function weld_hidden.report_examination_progress() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_examination_progress.sql
