--! Previous: sha1:3ccd9c5aa6e9628008ddce7040e527ee514daa07
--! Hash: sha1:8ee33866d73a7820cb3980427d8f09da17cbc168
--! Message: The welds of a test package that is not open keep their data

-- The welds of a test package that is not open keep their data (a follow-up of F7's release rule).
--
-- Releasing a package is refused unless it is ready (000009), and its lists of ISOs and welds are
-- frozen once it is released (000008). But its welds were not: a weld could be moved off or onto a
-- released package's ISO, or be given another welder, WPS, size or date, after the readiness that
-- let the package go had been judged on the old values. Now a request that writes a weld's data
-- (not its status: NDT results still move welds) is refused with WD008 while the weld belongs to a
-- package that is not open, directly or through its ISO, before or after the change. Moving the
-- package back to open (released -> open) is how a weld of it is corrected.
--
-- As the other package rules, it holds requests (a role set by the server), not the owner: the seed
-- generator and a DBA write as they must. The packages are locked FOR NO KEY UPDATE, in id order,
-- as the membership rule locks them, so a release and a weld change queue instead of crossing.

create or replace function weld_private.tg_welds__package_open() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  package record;
begin
  if weld_hidden.request_role() is null then
    return new;
  end if;
  if tg_op = 'UPDATE'
     and (new.iso_id, new.weld_number, new.type, new.size, new.schedule, new.wall_thickness,
          new.material, new.welder_id, new.wps_id, new.welded_on)
         is not distinct from
         (old.iso_id, old.weld_number, old.type, old.size, old.schedule, old.wall_thickness,
          old.material, old.welder_id, old.wps_id, old.welded_on) then
    return new;
  end if;
  for package in
    select p.package_number, p.state
      from weld_public.test_packages p
     where p.tenant_id = new.tenant_id
       and (p.id in (select l.test_package_id
                       from weld_public.test_package_isos l
                      where l.tenant_id = new.tenant_id
                        and l.iso_id in (new.iso_id, old.iso_id))
            or p.id in (select l.test_package_id
                          from weld_public.test_package_welds l
                         where l.tenant_id = new.tenant_id and l.weld_id = new.id))
     order by p.id
       for no key update
  loop
    if package.state <> 'open' then
      raise exception 'test package % is %; the data of its welds changes only while it is open',
        package.package_number, package.state
        using errcode = 'WD008';
    end if;
  end loop;
  return new;
end
$$;

drop trigger if exists _100_package_open on weld_public.welds;
create trigger _100_package_open
  before insert or update of iso_id, weld_number, type, size, schedule, wall_thickness, material,
    welder_id, wps_id, welded_on
  on weld_public.welds
  for each row execute function weld_private.tg_welds__package_open();
