// The words the database and the TypeScript layers share, each spelled once. Every list mirrors a
// SQL enum, CHECK constraint or role of the migrations; test/db/vocabulary.test.ts reads the
// catalog and fails when the two drift apart.

/** The database roles a request runs as, least privileged first; each includes the ones before. */
export const REQUEST_ROLES = [
  'weld_anonymous',
  'weld_viewer',
  'weld_inspector',
  'weld_engineer',
  'weld_admin',
] as const;
export type RequestRole = (typeof REQUEST_ROLES)[number];

/** A user's role (SQL enum weld_public.user_role), least first. */
export const USER_ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** The request role a signed-in user's transactions run as. */
export const requestRoleOf = (role: UserRole): RequestRole => `weld_${role}`;

/** A weld's status (SQL enum weld_public.weld_status), as the contract spells it. */
export const WELD_STATUSES = ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'] as const;
export type WeldStatus = (typeof WELD_STATUSES)[number];

/** Weld types (CHECK on weld_public.welds.type): butt, socket, fillet, branch, tie-in. */
export const WELD_TYPES = ['BW', 'SW', 'FW', 'BR', 'TW'] as const;

/** Fluid services of B31.3 (CHECK on weld_public.isos.fluid_service). */
export const FLUID_SERVICES = [
  'normal',
  'category_d',
  'category_m',
  'severe_cyclic',
  'high_pressure',
] as const;

/** Page sizes of every list, REST and GraphQL alike. */
export const PAGE_SIZE = { default: 50, max: 500 } as const;
