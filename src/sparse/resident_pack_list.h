// The packed copies of one sparse descriptor (dnn_resident_pack.cu), one per device, published
// without a lock. Host-only, so that tests/test_sparse_resident.cpp races it on host memory.
//
// Why: the copy is built by the first resident call that uses the descriptor, and the descriptor may
// be read by several host threads at once (each with its own handle / stream; cuDNN's rule: calls
// only read a descriptor, Set* / Destroy must not overlap a call that uses it). Two threads making
// that first call at the same moment both find no copy and both build one. publish() is a
// compare-exchange on the list head: exactly one copy per device is published, every caller gets
// that one, and the loser frees its own (it was never seen by another thread). Readers never wait on
// a thread that is packing, and no lock is held across a kernel and a stream synchronize.
//
// One copy per device, never replaced while the descriptor is unchanged: replacing a copy could free
// memory that another thread's call (on another device) has just been handed. Each copy carries one
// int of layout data (`aux`: the packed layer's list bytes per chunk, dnn_resident_pack.cu), published
// and handed out with it.
#pragma once

#include <atomic>
#include <new>

namespace jhdnn::sparse {

class ResidentPackList {
 public:
  ResidentPackList() = default;
  ResidentPackList(const ResidentPackList&) = delete;
  ResidentPackList& operator=(const ResidentPackList&) = delete;
  // Frees the list's host nodes only: the owner frees the copies first (release).
  ~ResidentPackList() {
    release([](int, float*) {});
  }

  // The copy published for `device`, or nullptr; *aux (if given) its aux value. Safe concurrently
  // with publish().
  float* find(int device, int* aux = nullptr) const {
    for (const Node* q = head_.load(std::memory_order_acquire); q != nullptr; q = q->next)
      if (q->device == device) {
        if (aux) *aux = q->aux;
        return q->data;
      }
    return nullptr;
  }

  // Publishes `data` (non-null, complete: readers use it as soon as they see it) as the copy for
  // `device` unless a copy for `device` is there already. Returns the copy every caller must use:
  // `data` if this call published it; the earlier copy if another thread won (the caller frees
  // `data`); nullptr if the host node could not be allocated (nothing published; the caller frees
  // `data` and fails). *aux_out (if given) gets the returned copy's aux (this call's `aux` if it won).
  float* publish(int device, float* data, int aux = 0, int* aux_out = nullptr) {
    Node* node = new (std::nothrow) Node{device, data, aux, head_.load(std::memory_order_acquire)};
    if (node == nullptr) return nullptr;
    for (;;) {
      // node->next is the head this attempt would link to: look for a copy of `device` below it.
      for (const Node* q = node->next; q != nullptr; q = q->next)
        if (q->device == device) {
          float* const winner = q->data;
          if (aux_out) *aux_out = q->aux;
          delete node;
          return winner;
        }
      // Succeeds only if nothing was published since node->next was read; else node->next is
      // reloaded with the new head and the scan runs again (the new nodes may hold `device`).
      if (head_.compare_exchange_weak(node->next, node, std::memory_order_acq_rel, std::memory_order_acquire)) {
        if (aux_out) *aux_out = aux;
        return data;
      }
    }
  }

  // Calls free_copy(device, data) on every copy and empties the list. NOT safe concurrently with
  // find / publish: only Set* and Destroy call it (the descriptor changes or goes away).
  template <class Free>
  void release(Free&& free_copy) {
    Node* q = head_.exchange(nullptr, std::memory_order_acq_rel);
    while (q != nullptr) {
      Node* const next = q->next;
      free_copy(q->device, q->data);
      delete q;
      q = next;
    }
  }

  // The number of copies (tests).
  int size() const {
    int k = 0;
    for (const Node* q = head_.load(std::memory_order_acquire); q != nullptr; q = q->next) ++k;
    return k;
  }

 private:
  struct Node {
    int device;
    float* data;
    int aux;
    Node* next;
  };
  std::atomic<Node*> head_{nullptr};
};

}  // namespace jhdnn::sparse
