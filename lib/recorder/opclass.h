/*
 * opclass.h - the class of an op type (collective, point-to-point,
 * lifecycle) from CC_OP_TYPE_MAP, for the recorder's writer and its dump
 * (internal to lib/recorder).
 */
#ifndef CC_RECORDER_OPCLASS_H
#define CC_RECORDER_OPCLASS_H

#include "ccomm/types.h"

/* Window ops (class RMA) are recorded as point-to-point entries: one peer, no collective seq. */
enum cc__fr_op_class {
    CC__FR_CLASS_COLL = 1,
    CC__FR_CLASS_P2P,
    CC__FR_CLASS_LIFE,
    CC__FR_CLASS_RMA = CC__FR_CLASS_P2P
};

/* The class of `type`; 0 for a value outside the table. */
static inline int cc__fr_op_class(unsigned type)
{
    static const unsigned char cls[CC_OP_TYPE_COUNT] = {
#define CC__FR_OP_CLASS(name, s, c) CC__FR_CLASS_##c,
        CC_OP_TYPE_MAP(CC__FR_OP_CLASS)
#undef CC__FR_OP_CLASS
    };
    return type < CC_OP_TYPE_COUNT ? cls[type] : 0;
}

#endif /* CC_RECORDER_OPCLASS_H */
