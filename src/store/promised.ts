// The rooms declare their repositories asynchronous (a PostgreSQL query is a round trip); the
// embedded SQLite repositories answer synchronously, in one transaction each. This hands a
// synchronous repository to the rooms as their asynchronous interface: every method runs at once
// and gives its result, or its error, as a settled promise. The compiler checks the SQLite class
// against the interface through this type.

/** The methods of `T`, each returning a promise of what it returned. */
export type Promised<T> = {
  [K in keyof T as T[K] extends (...args: never[]) => unknown ? K : never]: T[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<R>
    : never;
};

export function promised<T extends object>(sync: T): Promised<T> {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(sync, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key);
      if (typeof value !== 'function') return value;
      let wrapper = wrapped.get(key);
      if (!wrapper) {
        wrapper = (...args: unknown[]): Promise<unknown> => {
          try {
            return Promise.resolve((value as (...a: unknown[]) => unknown).apply(target, args));
          } catch (error) {
            return Promise.reject(error);
          }
        };
        wrapped.set(key, wrapper);
      }
      return wrapper;
    },
  }) as unknown as Promised<T>;
}
