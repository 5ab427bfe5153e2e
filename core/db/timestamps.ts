const stamps = new WeakMap<object, Date>();

/**
 * `onCreate` value of a record's timestamps: one instant per new entity, so `createdAt` and
 * `updatedAt` of a fresh record are equal (two `new Date()` calls could straddle a millisecond).
 */
export function creationTime(entity: object): Date {
  let stamp = stamps.get(entity);
  if (!stamp) stamps.set(entity, (stamp = new Date()));
  return stamp;
}
