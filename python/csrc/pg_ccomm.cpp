/*
 * pg_ccomm.cpp - the process group's life: its Work objects, the completion
 * thread that ends them in issue order, coalescing (batch_isend_irecv), the
 * abort hook that keeps the cause of a failure for the error text, and the
 * opt-in Python-visible hooks. The collectives themselves are in ops.cpp.
 */
#include "pg_ccomm.hpp"

#include <Python.h>

#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace ccomm_torch
{

std::atomic<bool> g_py_exiting{false};
std::atomic<int> g_py_in{0};

/* A Future that may hold CUDA tensors must be made with their device (torch checks it). */
static std::vector<c10::Device> futureDevices(int device)
{
    if (device == CC_DEVICE_CPU) return {};
    return {c10::Device(c10::DeviceType::CUDA, (c10::DeviceIndex)device)};
}

WorkCcomm::WorkCcomm(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, int device)
    : c10d::Work(rank, type), device(device), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), futureDevices(device)))
{
}

/* The completion thread always ends a queued work before dropping it; a work that never
 * reached the queue (its call failed) owns no handle. */
WorkCcomm::~WorkCcomm()
{
    cc_work_free(cw);
}

c10::intrusive_ptr<c10::ivalue::Future> WorkCcomm::getFuture()
{
    return future_;
}

int WorkCcomm::sourceRank() const
{
    TORCH_CHECK(src_rank >= 0, "ccomm: sourceRank() is only defined for a recv");
    return src_rank;
}

void WorkCcomm::complete(const std::string &error)
{
    if (error.empty()) {
        finish();
        future_->markCompleted(c10::IValue(outputs_));
        return;
    }
    auto ep = std::make_exception_ptr(std::runtime_error(error));
    finish(ep);
    future_->setError(ep);
}

ProcessGroupCcomm::ProcessGroupCcomm(cc_comm_t *comm, int rank, int size, std::string name,
                                     int64_t timeout_ms)
    : PGBase(rank, size), comm_(comm), name_(std::move(name)), timeout_ms_(timeout_ms)
{
    cc_status_t st = cc_hook_add_abort(comm_, &ProcessGroupCcomm::abortHook, this, 0, &abort_hook_);
    if (st != CC_OK) {
        cc_comm_destroy(comm_);
        TORCH_CHECK(false, "ccomm: cannot add the abort hook to process group ", name_, ": ",
                    cc_status_name(st));
    }
    completer_ = std::thread([this] { completionLoop(); });
}

ProcessGroupCcomm::~ProcessGroupCcomm()
{
    {
        std::lock_guard<std::mutex> l(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    /* Python hooks run on the completion thread and take the GIL: never join while holding
     * it, or a destructor run by Python's garbage collector would wait for itself. */
    PyThreadState *ts = nullptr;
    if (Py_IsInitialized() && PyGILState_Check()) ts = PyEval_SaveThread();
    if (completer_.joinable()) completer_.join();
    destroyDeviceComms();
    cc_comm_destroy(comm_);
    if (ts) PyEval_RestoreThread(ts);
    {
        /* The hooks hold Python objects: drop them with the GIL held. */
        PyGILState_STATE g = PyGILState_Ensure();
        pre_hooks_.clear();
        post_hooks_.clear();
        PyGILState_Release(g);
    }
}

cc_op_opts_t ProcessGroupCcomm::opOpts(std::chrono::milliseconds timeout, int tag) const
{
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    if (timeout.count() > 0) o.timeout_ms = timeout.count();
    o.tag = tag;
    return o;
}

c10::intrusive_ptr<WorkCcomm> ProcessGroupCcomm::newWork(c10d::OpType type,
                                                         std::vector<at::Tensor> outputs,
                                                         int device)
{
    return c10::make_intrusive<WorkCcomm>(getRank(), type, std::move(outputs), device);
}

std::string ProcessGroupCcomm::lastAbort() const
{
    std::lock_guard<std::mutex> l(abort_mu_);
    return abort_msg_;
}

/* Where the watchdog wrote this job's dumps, for the error text: "<dump dir>/<job id>", the
 * job id being the folder of the ring file. */
static std::string dumpHint()
{
    const char *ring = cc_recorder_ring_path();
    const char *dir = cc_env_effective("CCOMM_DUMP_DIR");
    if (!ring || !dir) return "";
    std::string r(ring);
    size_t slash = r.rfind('/');
    size_t prev =
        slash == std::string::npos || slash == 0 ? std::string::npos : r.rfind('/', slash - 1);
    if (prev == std::string::npos) return "";
    std::string job = r.substr(prev + 1, slash - prev - 1);
    return "; every rank's flight recorder is dumped under " + std::string(dir) + "/" + job +
           " (run `ccdump diagnose " + std::string(dir) + "/" + job + "`)";
}

std::string ProcessGroupCcomm::errorText(const char *what, cc_status_t st) const
{
    std::ostringstream s;
    s << "ccomm: " << what << " on process group " << name_ << " (rank " << getRank() << " of "
      << getSize() << ") failed: " << cc_status_name(st) << " (" << cc_status_str(st) << ")";
    std::string why = lastAbort();
    /* "timed out; rank 0 was waiting for rank 2 (...)": the status is said already. */
    std::string said = std::string(cc_status_str(st)) + "; ";
    if (why.compare(0, said.size(), said) == 0) why.erase(0, said.size());
    if (!why.empty() && why != cc_status_str(st)) s << ": " << why;
    if (CC_STATUS_IS_CALL_ERROR(st) && why.empty())
        s << "; the ccomm log line above names the argument";
    else if (!CC_STATUS_IS_CALL_ERROR(st))
        s << "; the process group is broken: later calls on it fail at once" << dumpHint();
    return s.str();
}

cc_work_t **ProcessGroupCcomm::slot(const c10::intrusive_ptr<WorkCcomm> &w, size_t bytes)
{
    bool hooks;
    {
        std::lock_guard<std::mutex> l(mu_);
        hooks = !post_hooks_.empty();
    }
    /* A device op returns once enqueued: only its handle says when the GPU finished. */
    w->inline_op =
        bytes <= kInlineBytes && !hooks && !coalescing_ && w->device == CC_DEVICE_CPU;
    return w->inline_op ? nullptr : &w->cw;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCcomm::submit(const c10::intrusive_ptr<WorkCcomm> &w,
                                                         cc_status_t st, const char *what)
{
    if (w->inline_op && !CC_STATUS_IS_CALL_ERROR(st)) {
        /* It ran: end the Work now, an error included (wait() raises it, as for any op). */
        /* Inline ops are collectives, numbered as ccomm numbers them: every collective of
         * the communicator passes this group, one ccomm call per method. */
        std::string err = st == CC_OK ? ""
                                      : errorText((std::string(what) + " (collective #" +
                                                   std::to_string(coll_issued_ - dev_colls_) + ")")
                                                      .c_str(),
                                                  st);
        if (st == CC_OK && w->finish_fn) w->finish_fn();
        w->finish_fn = nullptr;
        w->keep.clear();
        w->complete(err);
        return w;
    }
    if (st != CC_OK) {
        cc_work_free(w->cw);
        w->cw = nullptr;
        TORCH_CHECK(false, errorText(what, st));
    }
    c10d::OpType type = w->retrieveOpType();
    if (w->device != CC_DEVICE_CPU && type != c10d::OpType::SEND && type != c10d::OpType::RECV)
        dev_colls_++; /* numbered by its device communicator, not by comm_ */
    if (coalescing_) {
        coalesced_.push_back(w); /* queued by endCoalescing, once the group is issued */
        return w;
    }
    copyBackEnqueued(w);
    {
        std::lock_guard<std::mutex> l(mu_);
        queue_.push_back(w);
    }
    cv_.notify_one();
    return w;
}

static std::string opLabel(const cc_op_info_t &i)
{
    char buf[160];
    if (i.coll_seq)
        snprintf(buf, sizeof(buf), "%s (collective #%llu)", cc_op_type_name(i.type),
                 (unsigned long long)i.coll_seq);
    else
        snprintf(buf, sizeof(buf), "%s (peer %d, p2p #%llu)", cc_op_type_name(i.type), i.peer,
                 (unsigned long long)i.p2p_seq);
    return buf;
}

void ProcessGroupCcomm::completionLoop()
{
    for (;;) {
        c10::intrusive_ptr<WorkCcomm> w;
        {
            std::unique_lock<std::mutex> l(mu_);
            cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;
            w = queue_.front();
            queue_.pop_front();
        }
        cc_status_t st = cc_work_wait(w->cw, -1);
        /* Held until the work's last reference here is gone (w.reset() below): ending the
         * work runs Python hooks and may drop the last reference to a Python-made tensor. */
        PyGate gate;
        if (!gate.open) {
            /* Python is exiting: the work, its tensors and its handle are left to the end of
             * the process (dropping them could take the GIL of a finalizing interpreter). */
            (void)w.release();
            continue;
        }
        int done = 0;
        cc_work_test(w->cw, &done);
        cc_op_info_t info;
        cc_work_info(w->cw, &info);
        std::string err;
        if (st != CC_OK) {
            err = errorText(opLabel(info).c_str(), st);
        } else if (w->finish_fn) {
            try {
                w->finish_fn();
            } catch (const std::exception &e) {
                err = std::string("ccomm: copying the result of ") + opLabel(info) +
                      " failed: " + e.what();
            }
        }
        runPostHooks(info);
        cc_work_free(w->cw);
        w->cw = nullptr;
        /* An op that still runs (its engine stuck past the grace) keeps its buffers. */
        if (done)
            w->keep.clear();
        else
            new std::vector<at::Tensor>(std::move(w->keep)); /* leaked on purpose */
        w->finish_fn = nullptr;
        w->complete(err);
        w.reset(); /* possibly the last reference: inside the gate */
    }
}

/*
 * A device op's staged results are copied back right after its enqueue, on the issuing
 * thread: the copy is one more kernel on the same current stream, so it runs after the op on
 * the GPU, and before anything the caller queues next. (The completion thread has another
 * current stream; a copy there would race the caller's next kernels.) CPU ops copy back on
 * the completion thread, once the op ended.
 */
void ProcessGroupCcomm::copyBackEnqueued(const c10::intrusive_ptr<WorkCcomm> &w)
{
    if (w->device == CC_DEVICE_CPU || !w->finish_fn) return;
    auto fn = std::move(w->finish_fn);
    w->finish_fn = nullptr;
    fn();
}

void ProcessGroupCcomm::runPostHooks(const cc_op_info_t &info)
{
    std::vector<OpHook> hooks;
    {
        std::lock_guard<std::mutex> l(mu_);
        if (post_hooks_.empty()) return;
        hooks = post_hooks_;
    }
    for (auto &h : hooks)
        h(info);
}

void ProcessGroupCcomm::abortHook(const cc_abort_info_t *info, void *user)
{
    auto *pg = static_cast<ProcessGroupCcomm *>(user);
    std::lock_guard<std::mutex> l(pg->abort_mu_);
    if (pg->abort_msg_.empty()) pg->abort_msg_ = info->message;
}

cc_status_t ProcessGroupCcomm::preHook(const cc_op_info_t *op, void *user)
{
    auto *pg = static_cast<ProcessGroupCcomm *>(user);
    std::vector<OpHook> hooks;
    {
        std::lock_guard<std::mutex> l(pg->mu_);
        hooks = pg->pre_hooks_;
    }
    for (auto &h : hooks)
        h(*op);
    return CC_OK;
}

void ProcessGroupCcomm::addPreHook(OpHook fn)
{
    std::lock_guard<std::mutex> l(mu_);
    if (!pre_hook_) {
        cc_status_t st = cc_hook_add_pre(comm_, &ProcessGroupCcomm::preHook, this, 0, &pre_hook_);
        TORCH_CHECK(st == CC_OK, "ccomm: cannot add a pre hook to process group ", name_, ": ",
                    cc_status_name(st));
        for (auto &kv : dev_comms_) {
            st = cc_hook_add_pre(kv.second.comm, &ProcessGroupCcomm::preHook, this, 0,
                                 &kv.second.pre_hook);
            TORCH_CHECK(st == CC_OK, "ccomm: cannot add a pre hook to ", name_, ".cuda", kv.first,
                        ": ", cc_status_name(st));
        }
    }
    pre_hooks_.push_back(std::move(fn));
}

void ProcessGroupCcomm::addPostHook(OpHook fn)
{
    std::lock_guard<std::mutex> l(mu_);
    post_hooks_.push_back(std::move(fn));
}

void ProcessGroupCcomm::startCoalescing()
{
    TORCH_CHECK(!coalescing_, "ccomm: process group ", name_, " is already coalescing");
    cc_status_t st = cc_group_start();
    TORCH_CHECK(st == CC_OK, errorText("group start", st));
    coalescing_ = true;
}

/* batch_isend_irecv: the sends and receives issued since startCoalescing run as one ccomm
 * group, so any order on any rank completes; each keeps its own Work. */
void ProcessGroupCcomm::issueCoalesced()
{
    TORCH_CHECK(coalescing_, "ccomm: endCoalescing without startCoalescing on process group ",
                name_);
    coalescing_ = false;
    cc_work_t *gw = nullptr;
    cc_status_t st = cc_group_end(nullptr, &gw);
    std::vector<c10::intrusive_ptr<WorkCcomm>> members;
    members.swap(coalesced_);
    /* Members end with the group; their own handles carry their statuses. */
    cc_work_free(gw);
    if (st != CC_OK) {
        for (auto &m : members) {
            cc_work_wait(m->cw, -1); /* ended with the group's status */
            cc_work_free(m->cw);
            m->cw = nullptr;
            m->complete(errorText("batch_isend_irecv", st));
        }
        TORCH_CHECK(false, errorText("batch_isend_irecv", st));
    }
    /* Before they are queued: the completion thread must not see a finish_fn being moved. */
    for (auto &m : members)
        copyBackEnqueued(m);
    {
        std::lock_guard<std::mutex> l(mu_);
        for (auto &m : members)
            queue_.push_back(m);
        last_coalesced_ = members.empty() ? c10::intrusive_ptr<WorkCcomm>() : members.back();
    }
    cv_.notify_one();
}

#if CCOMM_TORCH2
c10::intrusive_ptr<c10d::Work> ProcessGroupCcomm::endCoalescing()
{
    issueCoalesced();
    /* Members complete in order, so the last one's Work stands for the batch. */
    if (last_coalesced_) return last_coalesced_;
    auto w = newWork(c10d::OpType::COALESCED, {});
    w->complete(""); /* an empty batch */
    return w;
}
#else
void ProcessGroupCcomm::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>> &reqs)
{
    (void)reqs; /* the same Work objects the sends and receives returned */
    issueCoalesced();
}
#endif

} // namespace ccomm_torch
