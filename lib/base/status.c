/* status.c - names and descriptions of statuses, dtypes, ops and op types. */
#include <string.h>
#include <strings.h>

#include "ccomm/status.h"
#include "ccomm/types.h"

const char *cc_status_str(cc_status_t status)
{
    switch (status) {
#define CC__STATUS_CASE(name, value, desc)                                                         \
    case CC_##name:                                                                                \
        return desc;
        CC_STATUS_MAP(CC__STATUS_CASE)
#undef CC__STATUS_CASE
    }
    return "unknown status";
}

const char *cc_status_name(cc_status_t status)
{
    switch (status) {
#define CC__STATUS_CASE(name, value, desc)                                                         \
    case CC_##name:                                                                                \
        return #name;
        CC_STATUS_MAP(CC__STATUS_CASE)
#undef CC__STATUS_CASE
    }
    return "UNKNOWN";
}

static const char *const dtype_names[] = {
#define CC__DTYPE_NAME(name, s, size, torch) s,
    CC_DTYPE_MAP(CC__DTYPE_NAME)
#undef CC__DTYPE_NAME
};
static const size_t dtype_sizes[] = {
#define CC__DTYPE_SIZE(name, s, size, torch) size,
    CC_DTYPE_MAP(CC__DTYPE_SIZE)
#undef CC__DTYPE_SIZE
};
static const char *const redop_names[] = {
#define CC__REDOP_NAME(name, s) s,
    CC_REDOP_MAP(CC__REDOP_NAME)
#undef CC__REDOP_NAME
};
static const char *const op_type_names[] = {
#define CC__OPTYPE_NAME(name, s, cls) s,
    CC_OP_TYPE_MAP(CC__OPTYPE_NAME)
#undef CC__OPTYPE_NAME
};

const char *cc_dtype_name(cc_dtype_t dtype)
{
    return (unsigned)dtype < CC_DTYPE_COUNT ? dtype_names[dtype] : "?";
}

size_t cc_dtype_size(cc_dtype_t dtype)
{
    return (unsigned)dtype < CC_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

const char *cc_redop_name(cc_redop_t op)
{
    return (unsigned)op < CC_REDOP_COUNT ? redop_names[op] : "?";
}

const char *cc_op_type_name(cc_op_type_t op)
{
    return (unsigned)op < CC_OP_TYPE_COUNT ? op_type_names[op] : "?";
}

/* Long names users type, besides the short ones of the table. */
static const struct {
    const char *name;
    cc_dtype_t dtype;
} dtype_aliases[] = {
    {"int8", CC_INT8},         {"char", CC_INT8},       {"uint8", CC_UINT8},
    {"byte", CC_UINT8},        {"int32", CC_INT32},     {"int", CC_INT32},
    {"uint32", CC_UINT32},     {"int64", CC_INT64},     {"long", CC_INT64},
    {"uint64", CC_UINT64},     {"float16", CC_FLOAT16}, {"half", CC_FLOAT16},
    {"bfloat16", CC_BFLOAT16}, {"float32", CC_FLOAT32}, {"float", CC_FLOAT32},
    {"float64", CC_FLOAT64},   {"double", CC_FLOAT64},  {"int16", CC_INT16},
    {"short", CC_INT16},       {"uint16", CC_UINT16},
};

cc_status_t cc_dtype_parse(const char *name, cc_dtype_t *out)
{
    if (!name || !out) return CC_ERR_INVALID_ARG;
    for (unsigned i = 0; i < CC_DTYPE_COUNT; i++)
        if (!strcasecmp(name, dtype_names[i])) {
            *out = (cc_dtype_t)i;
            return CC_OK;
        }
    for (size_t i = 0; i < sizeof(dtype_aliases) / sizeof(dtype_aliases[0]); i++)
        if (!strcasecmp(name, dtype_aliases[i].name)) {
            *out = dtype_aliases[i].dtype;
            return CC_OK;
        }
    return CC_ERR_INVALID_ARG;
}

cc_status_t cc_redop_parse(const char *name, cc_redop_t *out)
{
    if (!name || !out) return CC_ERR_INVALID_ARG;
    for (unsigned i = 0; i < CC_REDOP_COUNT; i++)
        if (!strcasecmp(name, redop_names[i])) {
            *out = (cc_redop_t)i;
            return CC_OK;
        }
    if (!strcasecmp(name, "premulsum")) {
        *out = CC_PREMUL_SUM;
        return CC_OK;
    }
    return CC_ERR_INVALID_ARG;
}
