--! Previous: sha1:4ce244cd3194f6b4cb903770de6be60237902e87
--! Hash: sha1:8cf7637a716b1c93e071f682c10c40a30aefa771
--! Message: Rules run with custom plans on pooled connections

-- PostgreSQL 18 caches the plans of SQL-language functions per session. After five calls on one
-- connection (the service's connections are pooled) it may switch to a generic plan, made without
-- the tenant's or package's values, which reads whole tables: a package's readiness went from
-- 0.17 s to 0.8-1.1 s at the sixth call on the 1,000,000-weld bench tenant (found while measuring
-- the kept reports of 000035, which set the same). The three rules the REST routes run (a package's
-- readiness, an ISO's examination, a draw) now plan for their values at every call.
--! Included functions/weld_public.test_packages_readiness_reasons.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.test_packages_readiness_reasons(test_package weld_public.test_packages)
  returns setof weld_public.readiness_reason
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
  -- A custom plan at every call: PostgreSQL 18 caches the plans of SQL functions per session, and
  -- after five calls on a pooled connection the generic one (tenant and package unknown) read
  -- whole tables: 0.8 to 1.1 s for an 800-weld package's readiness instead of 0.17 s.
  set plan_cache_mode = force_custom_plan
as $$
  with members as (
    select pw.weld_id from weld_public.test_package_welds pw
     where pw.tenant_id = test_package.tenant_id and pw.test_package_id = test_package.id
    union
    select w.id
      from weld_public.test_package_isos pi
      join weld_public.welds w on w.tenant_id = pi.tenant_id and w.iso_id = pi.iso_id
     where pi.tenant_id = test_package.tenant_id and pi.test_package_id = test_package.id
  ), pw as (
    select w.*, w as weld, i.iso_number, i.line_number
      from members m
      join weld_public.welds w on w.tenant_id = test_package.tenant_id and w.id = m.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where w.status <> 'VOIDED'
  ), lots as (
    select * from weld_private.lot_status(
      weld_private.rule_methods(), array(select distinct pw.line_number from pw), array(select pw.id from pw))
  ), lot_welds as (
    -- The candidates of those lots, with their selections and whether each is met.
    select c.*, s.id as selection_id, s.tier, s.seed, s.reason,
           s.id is not null and not exists (
             select from weld_private.weld_examinations e
              where e.tenant_id = test_package.tenant_id and e.weld_id = c.weld_id
                and e.method = any(c.closes) and e.examined_on >= c.welded_on) as open
      from weld_private.lot_candidates(array(select distinct l.method from lots l),
                                       array(select distinct pw.line_number from pw)) c
      join lots l on l.method = c.method and l.lot = c.lot
      left join weld_public.examination_selections s
        on s.tenant_id = test_package.tenant_id and s.method = c.method and s.weld_id = c.weld_id
  ), lot_isos as (
    -- Each lot's first ISO (by number) among the package's, to name in a shortfall.
    select distinct on (c.method, c.lot) c.method, c.lot, pw.iso_id
      from lot_welds c
      join pw on pw.id = c.weld_id
     order by c.method, c.lot, pw.iso_number
  ), reasons as (
    select 1 as rank, 'NO_WELDS' as code, null::uuid as weld_id, null::uuid as iso_id,
           'the package has no welds that are not VOIDED' as detail, '' as iso_number, '' as weld_number
     where not exists (select from pw)
    union all
    select 2, 'WELD_NOT_ACCEPTED', pw.id, pw.iso_id,
           format('weld %s on ISO %s is %s', pw.weld_number, pw.iso_number, pw.status), pw.iso_number, pw.weld_number
      from pw where pw.status <> 'ACCEPTED'
    union all
    select 3, 'EXAMINATION_SHORTFALL', null, li.iso_id,
           format('%s requires %s of its %s welds examined (%s%%%s) and has %s selected%s; draw a selection',
                  l.lot_name, l.required, l.welds, trim_scale(l.percent),
                  case when l.percent < 100 then ', every welder''s work represented' else '' end,
                  l.selected,
                  case when cardinality(l.stamps_not_covered) > 0
                       then ', none of welder ' || array_to_string(l.stamps_not_covered, ', ') else '' end),
           '', l.lot
      from lots l
      left join lot_isos li on li.method = l.method and li.lot = l.lot
     where l.shortfall > 0
    union all
    select 4, 'EXAMINATION_OPEN', pw.id, pw.iso_id,
           format('%s selection of weld %s on ISO %s (%s) is not yet examined by %s',
                  c.method, pw.weld_number, pw.iso_number,
                  case c.tier when 'random' then 'random, seed ' || c.seed else 'counted' end,
                  weld_private.methods_words(c.closes)),
           pw.iso_number, pw.weld_number
      from pw
      join lot_welds c on c.weld_id = pw.id
     where c.tier in ('random', 'examined') and c.open
    union all
    select 5, 'PROGRESSIVE_OPEN', c.weld_id, c.iso_id,
           format('%s progressive examination in %s is open: weld %s on ISO %s (tier %s) is not yet examined by %s; %s',
                  c.method, c.lot_name, c.weld_number, c.iso_number, c.tier,
                  weld_private.methods_words(c.closes), c.reason),
           c.iso_number, c.weld_number
      from lot_welds c
     where c.tier in ('1', '2', 'full') and c.open
    union all
    select 6, p.code, pw.id, pw.iso_id,
           format('weld %s on ISO %s: %s', pw.weld_number, pw.iso_number, p.detail), pw.iso_number, pw.weld_number
      from weld_private.weld_problems(array(select pw.weld from pw)) p
      join pw on pw.id = p.weld_id
  )
  select r.code, r.weld_id, r.iso_id, r.detail
    from reasons r
   order by r.rank, r.code, r.iso_number, r.weld_number, r.detail
$$;

comment on function weld_public.test_packages_readiness_reasons(weld_public.test_packages) is
  'Why the package is not ready for its pressure test (none when it is): NO_WELDS, WELD_NOT_ACCEPTED, EXAMINATION_SHORTFALL, EXAMINATION_OPEN, PROGRESSIVE_OPEN, and the weld checks of its welds (REEXAMINATION_OPEN among them). VOIDED welds drop out.';

grant execute on function weld_public.test_packages_readiness_reasons(weld_public.test_packages) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.test_packages_readiness_reasons.sql
--! Included functions/weld_public.isos_examination.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- An ISO's examination: per method, over the lots its welds belong to.
create or replace function weld_public.isos_examination(iso weld_public.isos)
  returns setof weld_public.examination_status
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
  -- A custom plan at every call: PostgreSQL 18 caches the plans of SQL functions per session, and
  -- after five calls on a pooled connection the generic one (tenant and package unknown) read
  -- whole tables: 0.8 to 1.1 s for an 800-weld package's readiness instead of 0.17 s.
  set plan_cache_mode = force_custom_plan
as $$
  with lots as (
    select * from weld_private.lot_status(
      weld_private.rule_methods(), array[iso.line_number],
      array(select w.id from weld_public.welds w where w.tenant_id = iso.tenant_id and w.iso_id = iso.id))
  ), required as (
    select l.method, max(l.percent) as required_percent, sum(l.welds)::integer as welds,
           sum(l.required)::integer as required, sum(l.selected)::integer as selected,
           sum(l.examined)::integer as examined, sum(l.shortfall)::integer as shortfall,
           sum(l.progressive_open)::integer as progressive_open,
           array(select distinct u.welder_id
                   from lots x cross join lateral unnest(x.welders_not_covered) as u (welder_id)
                  where x.method = l.method
                  order by 1) as welders_not_covered
      from lots l
     group by l.method
  ), no_longer_required as (
    -- Selections of this ISO's welds for a method the ISO no longer requires (its fluid service
    -- or rt_percent changed since): shown, with nothing required.
    select s.method, 0::numeric, 0, 0, count(*)::integer,
           count(*) filter (where weld_public.examination_selections_state(s) = 'done')::integer, 0,
           count(*) filter (where s.tier in ('1', '2', 'full')
                              and weld_public.examination_selections_state(s) = 'open')::integer,
           '{}'::uuid[]
      from weld_public.examination_selections s
      join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
     where w.tenant_id = iso.tenant_id and w.iso_id = iso.id
       and s.method not in (select r.method from required r)
     group by s.method
  )
  select * from required
  union all
  select * from no_longer_required
  order by 1
$$;

comment on function weld_public.isos_examination(weld_public.isos) is
  'Per NDT method, the examination of the lots this ISO''s welds belong to: candidate welds, required, selected, examined, shortfall, open progressive selections, and the welders not yet covered.';

grant execute on function weld_public.isos_examination(weld_public.isos) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.isos_examination.sql
--! Included functions/weld_public.draw_examination_selection.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- Random examination (341.4.1) for a line, or for the lots of an ISO's welds: what a lot already
-- examined counts first, a rejected one drawing its tier 1 (an examination recorded before the
-- draw is part of the sample); then one weld of each welder not yet represented; then the rest
-- the lot requires. Returns every selection it made.
create or replace function weld_public.draw_examination_selection(
  method text, line_number text default null, iso_id uuid default null, seed bigint default null
) returns setof weld_public.examination_selections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  -- A custom plan at every call: PostgreSQL 18 caches the plans of SQL functions per session, and
  -- after five calls on a pooled connection the generic one (tenant and package unknown) read
  -- whole tables: 0.8 to 1.1 s for an 800-weld package's readiness instead of 0.17 s.
  set plan_cache_mode = force_custom_plan
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  line text := draw_examination_selection.line_number;
  chosen bigint := draw_examination_selection.seed;
  made uuid[];
  counted record;
begin
  perform weld_private.require_role('inspector', 'drawing an examination selection');
  if method is null or not method = any('{RT,UT,MT,PT,VT,PWHT,PMI,HT}') then
    perform weld_private.invalid_input(
      format('method must be one of RT, UT, MT, PT, VT, PWHT, PMI, HT, not %s', coalesce(method, 'null')),
      '/method');
  end if;
  if (line is null) = (iso_id is null) then
    perform weld_private.invalid_input('give either lineNumber or isoId, not both or neither', '/lineNumber');
  end if;
  if chosen is not null and chosen not between 0 and 9007199254740991 then
    perform weld_private.invalid_input('seed must be a whole number from 0 to 9007199254740991', '/seed');
  end if;
  if iso_id is not null then
    select i.line_number into line from weld_public.isos i where i.tenant_id = tenant and i.id = iso_id;
    if line is null then
      raise exception 'iso % not found', iso_id using errcode = 'WD001';
    end if;
  elsif not exists (select from weld_public.isos i where i.tenant_id = tenant and i.line_number = line) then
    raise exception 'line % not found', line using errcode = 'WD001';
  end if;
  chosen := coalesce(chosen, floor(random() * 9007199254740991)::bigint);
  perform weld_private.lock_line(line);

  -- 1. What the lots in scope already examined counts.
  made := '{}';
  for counted in
    with examined as (
      select d.*, e.record, e.examined_on, e.result, e.ndt_record_id, e.inspection_id
        from weld_private.draw_scope(draw_examination_selection.method, line, draw_examination_selection.iso_id) d
        cross join lateral (
          select x.record, x.examined_on, x.result, x.ndt_record_id, x.inspection_id
            from weld_private.weld_examinations x
           where x.tenant_id = tenant and x.weld_id = d.weld_id and x.method = any(d.closes)
             and x.examined_on >= d.welded_on
           order by x.examined_on, x.created_at
           limit 1) e
       where not exists (select from weld_public.examination_selections s
                          where s.tenant_id = tenant and s.method = draw_examination_selection.method
                            and s.weld_id = d.weld_id)
    ), inserted as (
      insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
      select x.weld_id, draw_examination_selection.method, 'examined', null,
             format('examined: %s of %s counts toward %s', x.record, x.examined_on, x.lot_name),
             weld_hidden.current_user_id()
        from examined x
      returning id, weld_id
    )
    select i.id, x.result, x.ndt_record_id, x.inspection_id, x.record
      from inserted i join examined x on x.weld_id = i.weld_id
  loop
    made := made || counted.id;
    if counted.result = 'rejected' then
      made := made || weld_private.draw_next_tier(counted.id, counted.ndt_record_id, counted.inspection_id,
                                                  counted.record);
    end if;
  end loop;

  -- 2. and 3. One weld of each welder not yet represented, then the rest each lot requires.
  with scope as (
    select d.*, exists (select from weld_public.examination_selections s
                         where s.tenant_id = tenant and s.method = draw_examination_selection.method
                           and s.weld_id = d.weld_id) as selected,
           md5(chosen::text || ':' || d.weld_id::text) as rank
      from weld_private.draw_scope(draw_examination_selection.method, line, draw_examination_selection.iso_id) d
  ), lots as (
    select s.lot, count(*) as welds, count(*) filter (where s.selected) as selected,
           case when max(s.percent) >= 100 then count(*)
                else least(count(*), greatest(ceil(max(s.percent) * count(*) / 100), count(distinct s.welder_id)))
           end as required
      from scope s
     group by s.lot
  ), representatives as (
    -- Per lot, the first-ranked weld of each welder with no selection in it.
    select distinct on (s.lot, s.welder_id) s.*
      from scope s
     where not s.selected and s.welder_id is not null
       and not exists (select from scope o where o.lot = s.lot and o.welder_id = s.welder_id and o.selected)
     order by s.lot, s.welder_id, s.rank
  ), others as (
    select s.*, row_number() over (partition by s.lot order by s.rank) as n
      from scope s
     where not s.selected and s.weld_id not in (select r.weld_id from representatives r)
  ), picks as (
    select r.weld_id, r.lot, r.lot_name, true as representative from representatives r
    union all
    select o.weld_id, o.lot, o.lot_name, false
      from others o
      join lots l on l.lot = o.lot
     where o.n <= l.required - l.selected
                  - (select count(*) from representatives r where r.lot = o.lot)
  ), drawn as (
    insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
    select p.weld_id, draw_examination_selection.method, 'random', chosen,
           format('random: %s of the %s welds of %s required (each welder''s work represented), seed %s%s',
                  l.required, l.welds, p.lot_name, chosen,
                  case when p.representative then format('; drawn for welder %s', s.welder_stamp) else '' end),
           weld_hidden.current_user_id()
      from picks p
      join lots l on l.lot = p.lot
      join scope s on s.weld_id = p.weld_id
     order by p.lot, p.representative desc, s.rank
    returning id
  )
  select made || coalesce(array_agg(d.id), '{}') into made from drawn d;

  return query
  select s.* from weld_public.examination_selections s
   where s.tenant_id = tenant and s.id = any(made)
   order by s.selected_at, s.tier, s.id;
end
$$;

comment on function weld_public.draw_examination_selection(text, text, uuid, bigint) is
  'Random examination (B31.3 341.4.1) of a line''s lots (or those of an ISO''s welds): counts what they already examined (a rejection draws its tier 1), draws one weld of each welder not yet represented, then the rest to ceil(percent x candidates / 100), ranked by the seed (random when not given), which is stored. Returns the new selections. Inspector and up.';

grant execute on function weld_public.draw_examination_selection(text, text, uuid, bigint) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.draw_examination_selection.sql
