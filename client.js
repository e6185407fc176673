/** `belfry/client`: the SDK, kept under its first name; the package is `@belfry/client`. */
export * from '@belfry/client';
