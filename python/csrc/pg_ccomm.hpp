/*
 * pg_ccomm.hpp - the torch.distributed backend "ccomm": a c10d process group
 * whose every method maps onto one call of ccomm's C API.
 *
 * No collective logic lives here. A method checks its tensors (device,
 * dtype, list lengths), makes contiguous staging copies where PyTorch's
 * tensors are not, issues the ccomm call with a work handle, and hands back a
 * WorkCcomm. One completion thread per process group waits for the handles in
 * issue order (ccomm runs the ops of one communicator in that order), copies
 * staged results back, and completes the Work and its Future: DDP's reducer
 * and its comm hooks wait on that Future.
 *
 * torch 1.13 (Debian) has the creator return a c10d::ProcessGroup; torch 2.x
 * wants a c10d::Backend, which it wraps. CCOMM_TORCH2 picks the base class;
 * the virtuals' signatures are the same in both (docs/pytorch.md).
 */
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define CCOMM_TORCH2 1
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#define CCOMM_TORCH2 0
#endif
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <ccomm/ccomm.h>
}

namespace ccomm_torch
{

#if CCOMM_TORCH2
using PGBase = c10d::Backend;
#else
using PGBase = c10d::ProcessGroup;
#endif

/* A hook on the op's record: pre hooks on the issuing thread, post hooks on the
 * completion thread once the op ended. */
using OpHook = std::function<void(const cc_op_info_t &)>;

class WorkCcomm : public c10d::Work
{
  public:
    WorkCcomm(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);
    ~WorkCcomm() override;

    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
    std::vector<at::Tensor> result() override
    {
        return outputs_;
    }
    int sourceRank() const override;

    /* Completion thread: end the work well or with `error` (empty: success). */
    void complete(const std::string &error);

    cc_work_t *cw = nullptr;         /* owned; freed by the completion thread */
    std::vector<at::Tensor> keep;    /* staging buffers and inputs the op borrows */
    std::function<void()> finish_fn; /* copies staged results out, on success */
    int src_rank = -1;               /* recv: the peer */
    bool inline_op = false;          /* ran on the caller's thread (see slot()) */

  private:
    std::vector<at::Tensor> outputs_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class ProcessGroupCcomm : public PGBase
{
  public:
    /* Takes ownership of comm. name is PyTorch's group name (and description). */
    ProcessGroupCcomm(cc_comm_t *comm, int rank, int size, std::string name);
    ~ProcessGroupCcomm() override;

    const std::string getBackendName() const override
    {
        return "ccomm";
    }
    cc_comm_t *comm() const
    {
        return comm_;
    }
    const std::string &name() const
    {
        return name_;
    }

    void startCoalescing() override;
#if CCOMM_TORCH2
    /* torch 2.x: the batch's single Work is returned by endCoalescing (not built here:
     * Debian ships 1.13; see docs/pytorch.md). */
    c10::intrusive_ptr<c10d::Work> endCoalescing() override;
#else
    void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>> &reqs) override;
#endif

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                             const c10d::BroadcastOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                             const c10d::AllreduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    allreduce_coalesced(std::vector<at::Tensor> &tensors,
                        const c10d::AllreduceCoalescedOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                          const c10d::ReduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                             std::vector<at::Tensor> &inputs,
                                             const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                   const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                        std::vector<at::Tensor> &inputs,
                        const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::GatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                           std::vector<std::vector<at::Tensor>> &inputs,
                                           const c10d::ScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                  std::vector<std::vector<at::Tensor>> &inputs,
                                                  const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                         const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                                 std::vector<int64_t> &outputSplits,
                                                 std::vector<int64_t> &inputSplits,
                                                 const c10d::AllToAllOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                            std::vector<at::Tensor> &inputs,
                                            const c10d::AllToAllOptions &opts) override;
    void monitoredBarrier(const c10d::BarrierOptions &opts, bool waitAllRanks) override;
    void setSequenceNumberForGroup() override {}
    uint64_t getSequenceNumberForGroup() override
    {
        return coll_issued_;
    }
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dstRank,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int srcRank,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors,
                                                 int tag) override;
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;

    /* Python surface: opt-in hooks (see docs/pytorch.md for their cost). */
    void addPreHook(OpHook fn);
    void addPostHook(OpHook fn);
    /* Called around the completion thread's hook calls: the Python layer takes the GIL. */
    std::string lastAbort() const;

  private:
    /* A new work with its op's options; `what` names the op in errors. */
    c10::intrusive_ptr<WorkCcomm> newWork(c10d::OpType type, std::vector<at::Tensor> outputs);
    cc_op_opts_t opOpts(std::chrono::milliseconds timeout, int tag = 0) const;
    /*
     * Where the ccomm call puts its work handle: &w->cw (the op runs in the background and
     * the completion thread ends the Work), or NULL for a small collective (kInlineBytes or
     * less) when no Python post hook needs its record: the op then runs on the caller's
     * thread and the Work is complete when the call returns. A small op is all latency;
     * two thread handoffs cost more than the op.
     */
    cc_work_t **slot(const c10::intrusive_ptr<WorkCcomm> &w, size_t bytes);
    static constexpr size_t kInlineBytes = 64 * 1024;
    /* Enqueue a work whose ccomm call returned `st` (throws on error, nothing queued). */
    c10::intrusive_ptr<c10d::Work> submit(const c10::intrusive_ptr<WorkCcomm> &w, cc_status_t st,
                                          const char *what);
    std::string errorText(const char *what, cc_status_t st) const;
    /* Issue the coalesced sends and receives; their Works join the queue. */
    void issueCoalesced();
    void completionLoop();
    void runPostHooks(const cc_op_info_t &info);
    static void abortHook(const cc_abort_info_t *info, void *user);
    static cc_status_t preHook(const cc_op_info_t *op, void *user);

    cc_comm_t *comm_;
    std::string name_;
    uint64_t coll_issued_ = 0;

    std::mutex mu_; /* guards queue_, stop_, abort_msg_, hooks_ changes */
    std::condition_variable cv_;
    std::deque<c10::intrusive_ptr<WorkCcomm>> queue_;
    bool stop_ = false;
    std::thread completer_;

    bool coalescing_ = false;
    std::vector<c10::intrusive_ptr<WorkCcomm>> coalesced_;
    c10::intrusive_ptr<WorkCcomm> last_coalesced_; /* torch 2.x: the batch's Work */

    mutable std::mutex abort_mu_;
    std::string abort_msg_;
    cc_hook_handle_t abort_hook_ = 0, pre_hook_ = 0;
    std::vector<OpHook> pre_hooks_, post_hooks_; /* appended under mu_, read under mu_ */
};

/* Dtype and op mapping, shared by the methods (ops.cpp). */
cc_dtype_t toCcDtype(const at::Tensor &t, const char *arg, bool reducing);
cc_redop_t toCcRedop(const c10d::ReduceOp &op, at::ScalarType st, double *premul);
void checkCpuTensor(const at::Tensor &t, const char *arg);

} // namespace ccomm_torch
