/*
 * fake_plugin.c - a CUDA plugin that checks nothing and claims build
 * FAKE_BUILD_ID (CC_BUILD_ID when not given): test_build_id_core loads it
 * to see the core refuse another build by itself, and take its own.
 */
#include "base/build_id.h"
#include "core/plugin.h"

#ifndef FAKE_BUILD_ID
#define FAKE_BUILD_ID CC_BUILD_ID
#endif

static const cc_engine_v1_t g_engine = {.version = CC_ENGINE_VERSION_1, .name = "fake"};

static cc_status_t engine(const char *want, int device, const cc_engine_v1_t **out)
{
    (void)want;
    (void)device;
    *out = &g_engine;
    return CC_OK;
}

static const cc_plugin_t g_plugin = {.build_id = FAKE_BUILD_ID, .name = "fake", .engine = engine};

__attribute__((visibility("default"))) const cc_plugin_t *cc_plugin_init(const cc_core_t *core)
{
    (void)core;
    return &g_plugin;
}
