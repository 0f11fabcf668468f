#ifndef C_SECRET_SERVICE_SHIM_H
#define C_SECRET_SERVICE_SHIM_H

// The data layouts and function types of the few libsecret, GLib and GObject calls that
// OAuth2SecretService makes, written from their public headers (libsecret 0.20,
// GLib 2.74, stable ABI) so that building needs none of those headers: the libraries are
// loaded at run time with dlopen(3), as Chromium does. Nothing here links to them.

#include <stdint.h>

// SecretSchemaAttribute and SecretSchema (secret-schema.h).
typedef struct {
    const char *name;
    int type;  // SecretSchemaAttributeType: 0 string, 1 integer, 2 boolean
} OAuth2SecretSchemaAttribute;

typedef struct {
    const char *name;
    int flags;  // SecretSchemaFlags: 0 none, 1 << 1 don't match the schema name
    OAuth2SecretSchemaAttribute attributes[32];
    int reserved;
    void *reserved1;
    void *reserved2;
    void *reserved3;
    void *reserved4;
    void *reserved5;
    void *reserved6;
    void *reserved7;
} OAuth2SecretSchema;

// GError (gerror.h) and GList (glist.h).
typedef struct {
    uint32_t domain;
    int code;
    char *message;
} OAuth2GError;

typedef struct OAuth2GList {
    void *data;
    struct OAuth2GList *next;
    struct OAuth2GList *prev;
} OAuth2GList;

// GLib callbacks.
typedef unsigned int (*OAuth2GHashFunc)(const void *key);
typedef int (*OAuth2GEqualFunc)(const void *a, const void *b);
typedef void (*OAuth2GDestroyNotify)(void *data);

// GLib and GObject functions.
typedef void *(*OAuth2GHashTableNewFullFn)(OAuth2GHashFunc, OAuth2GEqualFunc, OAuth2GDestroyNotify, OAuth2GDestroyNotify);
typedef int (*OAuth2GHashTableInsertFn)(void *table, void *key, void *value);
typedef void *(*OAuth2GHashTableLookupFn)(void *table, const void *key);
typedef void (*OAuth2GHashTableUnrefFn)(void *table);
typedef char *(*OAuth2GStrdupFn)(const char *text);
typedef void (*OAuth2GErrorFreeFn)(OAuth2GError *error);
typedef const char *(*OAuth2GQuarkToStringFn)(uint32_t quark);
typedef void (*OAuth2GListFreeFullFn)(OAuth2GList *list, OAuth2GDestroyNotify free_function);

// libsecret functions (secret-password.h, secret-retrievable.h). Attributes are a
// GHashTable of string to string; a NULL collection means the default one.
typedef int (*OAuth2SecretPasswordStorevSyncFn)(const OAuth2SecretSchema *schema, void *attributes,
                                                const char *collection, const char *label,
                                                const char *password, void *cancellable,
                                                OAuth2GError **error);
typedef char *(*OAuth2SecretPasswordLookupvSyncFn)(const OAuth2SecretSchema *schema, void *attributes,
                                                   void *cancellable, OAuth2GError **error);
typedef int (*OAuth2SecretPasswordClearvSyncFn)(const OAuth2SecretSchema *schema, void *attributes,
                                                void *cancellable, OAuth2GError **error);
typedef OAuth2GList *(*OAuth2SecretPasswordSearchvSyncFn)(const OAuth2SecretSchema *schema, void *attributes,
                                                          int flags, void *cancellable, OAuth2GError **error);
typedef void *(*OAuth2SecretRetrievableGetAttributesFn)(void *retrievable);
typedef void (*OAuth2SecretPasswordFreeFn)(char *password);

/// Sets attribute `index` of `schema` (Swift sees the fixed array as a tuple).
static inline void oauth2_secret_schema_set_attribute(OAuth2SecretSchema *schema, int index, const char *name,
                                                      int type) {
    schema->attributes[index].name = name;
    schema->attributes[index].type = type;
}

#endif
