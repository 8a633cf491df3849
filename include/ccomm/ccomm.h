/*
 * ccomm/ccomm.h - the umbrella header: include this one.
 * Link with `pkg-config --libs ccomm` or CMake's `find_package(ccomm)`
 * (target ccomm::ccomm).
 */
#ifndef CCOMM_CCOMM_H
#define CCOMM_CCOMM_H

#include "ccomm/version.h"
#include "ccomm/status.h"
#include "ccomm/types.h"
#include "ccomm/comm.h"
#include "ccomm/work.h"
#include "ccomm/coll.h"
#include "ccomm/hooks.h"
#include "ccomm/recorder.h"
#include "ccomm/clog.h"
#include "ccomm/env.h"
#include "ccomm/group.h"
#include "ccomm/bytes.h"
#include "ccomm/window.h"

#endif /* CCOMM_CCOMM_H */
