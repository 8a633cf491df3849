/*
 * device.cpp - where an op of the "ccomm" process group runs: CPU tensors on the
 * group's communicator (ccomm's native engine), CUDA tensors on a device
 * communicator of the tensor's device (the CUDA plugin: NCCL, else ccomm's
 * native CUDA engine) and the device's current CUDA stream.
 *
 * The device communicators are made lazily, at the first op on a device, by a
 * split of the group's communicator: collective, as ProcessGroupNCCL's lazy
 * init (every rank reaches its first op on a device in the same order). The
 * CUDA half is compiled only against a torch built with CUDA (CCOMM_TORCH_CUDA,
 * pg_ccomm.hpp); the creation path is not, so a CPU-only torch can still reach
 * it (ccomm._C._device_comm) and see how a missing plugin or device fails.
 */
#include "pg_ccomm.hpp"

#if CCOMM_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include <string>

namespace ccomm_torch
{

void checkTensor(const at::Tensor &t, const char *arg)
{
    TORCH_CHECK_VALUE(t.defined(), "ccomm: ", arg, " is an undefined tensor");
    TORCH_CHECK_VALUE(t.layout() == at::kStrided, "ccomm: ", arg, " has layout ", t.layout(),
                      "; ccomm takes dense (strided) tensors only");
    if (t.device().is_cpu()) return;
#if CCOMM_TORCH_CUDA
    if (t.is_cuda()) return;
    TORCH_CHECK_VALUE(false, "ccomm: ", arg, " is on device ", t.device(),
                      ", which ccomm does not support (cpu and cuda only)");
#else
    if (t.is_cuda())
        TORCH_CHECK_VALUE(false, "ccomm: ", arg, " is on ", t.device(),
                          ", but this ccomm backend was built against a torch without CUDA "
                          "(no ATen/cuda/CUDAConfig.h), so it drives CPU tensors only; rebuild "
                          "it against a CUDA torch (docs/pytorch.md), or use backend \"nccl\"");
    TORCH_CHECK_VALUE(false, "ccomm: ", arg, " is on device ", t.device(),
                      ", which ccomm does not support (cpu only in this build)");
#endif
}

void checkSameDevice(const at::Tensor &ref, const at::Tensor &t, const char *fn, const char *arg)
{
    TORCH_CHECK_VALUE(t.device() == ref.device(), "ccomm: ", fn, ": ", arg, " is on ", t.device(),
                      " but the op's first tensor is on ", ref.device(),
                      "; all tensors of one op must be on the same device");
}

ProcessGroupCcomm::Target ProcessGroupCcomm::target(const at::Tensor &t, cc_op_opts_t *o)
{
#if CCOMM_TORCH_CUDA
    if (t.is_cuda()) {
        int d = t.device().index();
        cc_comm_t *c = deviceComm(d);
        /* Stream-ordered as any torch op on this device: after the kernels queued before it
         * on the current stream, before those queued after it. */
        o->stream = c10::cuda::getCurrentCUDAStream(d).stream();
        return {c, d};
    }
#else
    (void)o;
#endif
    (void)t;
    return {comm_, CC_DEVICE_CPU};
}

/* The text of a device communicator that could not be made. */
static std::string deviceCommError(const std::string &group, int ordinal, const char *name,
                                   cc_status_t st)
{
    const char *plugin = cc_env_effective("CCOMM_CUDA_PLUGIN");
    std::string s = "ccomm: process group " + group + " cannot make its communicator " + name +
                    " for device cuda:" + std::to_string(ordinal) + " (engine auto: nccl, else " +
                    "native cuda) through the CUDA plugin " + (plugin ? plugin : "(unknown)") +
                    " (CCOMM_CUDA_PLUGIN): " + cc_status_name(st) + " (" + cc_status_str(st) +
                    ")";
    /* The cause (the loader's error, the CUDA runtime's) as the core or the plugin logged it
     * on this thread; the split runs here, so that is where they say it. */
    const char *why = cc_last_error();
    return s + (*why ? std::string(": ") + why : std::string("; the ccomm log line above says why"));
}

cc_comm_t *ProcessGroupCcomm::deviceComm(int ordinal)
{
    TORCH_CHECK_VALUE(ordinal >= 0, "ccomm: device ordinal ", ordinal,
                      " is not a CUDA device (must be >= 0)");
    auto it = dev_comms_.find(ordinal);
    if (it != dev_comms_.end()) return it->second.comm;
    std::string name = name_ + ".cuda" + std::to_string(ordinal);
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    cfg.name = name.c_str();
    cfg.device = ordinal;
    cfg.engine = "auto";
    cfg.timeout_ms = timeout_ms_;
    DeviceComm dc;
    /* Key: this rank, so the device communicator keeps the group's rank order. */
    cc_status_t st = cc_comm_split(comm_, 0, getRank(), &cfg, &dc.comm);
    TORCH_CHECK(st == CC_OK, deviceCommError(name_, ordinal, name.c_str(), st));
    st = cc_hook_add_abort(dc.comm, &ProcessGroupCcomm::abortHook, this, 0, &dc.abort_hook);
    if (st == CC_OK && pre_hook_)
        st = cc_hook_add_pre(dc.comm, &ProcessGroupCcomm::preHook, this, 0, &dc.pre_hook);
    if (st != CC_OK) {
        cc_comm_destroy(dc.comm);
        TORCH_CHECK(false, "ccomm: cannot add the hooks of process group ", name_, " to ", name,
                    ": ", cc_status_name(st));
    }
    dev_comms_[ordinal] = dc;
    return dc.comm;
}

void ProcessGroupCcomm::destroyDeviceComms()
{
    for (auto &kv : dev_comms_)
        cc_comm_destroy(kv.second.comm); /* waits for its ops; drops its hooks */
    dev_comms_.clear();
}

} // namespace ccomm_torch
