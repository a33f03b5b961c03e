/// \file qk_heads.cuh
/// \brief `QKHeads`: the heads of q and k as one list of rows, for kernels that treat every
/// head alike (per-head norms, rotary embedding), and `QKHeadCursor` to walk that list.
#pragma once

#include <sgl_kernel/utils.cuh>

#include <cstdint>

namespace sglang::device {

/// \brief q `[tokens, q_heads, dim]` and k `[tokens, k_heads, dim]` (any token and head
/// strides, unit inner stride) seen as one list of rows: row `token * (q_heads + k_heads) + head`,
/// the q heads of a token before its k heads. Filled on the host, passed by value.
/// \tparam T Element type.
template <typename T>
struct QKHeads {
  T* q;                    ///< Query heads
  T* k;                    ///< Key heads
  int64_t q_token_stride;  ///< Elements between tokens of `q`
  int64_t q_head_stride;   ///< Elements between heads of `q`
  int64_t k_token_stride;  ///< Elements between tokens of `k`
  int64_t k_head_stride;   ///< Elements between heads of `k`
  int64_t num_tokens;      ///< Number of tokens
  int64_t num_q_heads;     ///< Query heads per token
  int64_t num_k_heads;     ///< Key heads per token

  /// \brief Heads per token, q and k together.
  /// \return `num_q_heads + num_k_heads`.
  SGL_DEVICE_HOST int64_t heads_per_token() const { return num_q_heads + num_k_heads; }

  /// \brief Rows in all.
  /// \return `num_tokens * heads_per_token()`.
  SGL_DEVICE_HOST int64_t num_rows() const { return num_tokens * heads_per_token(); }

  /// \brief Whether head `head` of a token is one of its q heads (else one of its k heads).
  /// \param head Head index within the token, q heads first.
  /// \return `head < num_q_heads`.
  SGL_DEVICE bool is_q(int64_t head) const { return head < num_q_heads; }

  /// \brief Where head `head` of token `token` starts.
  /// \param token Token index.
  /// \param head Head index within the token, q heads first.
  /// \return The row's first element, in `q` or in `k`.
  SGL_DEVICE T* row(int64_t token, int64_t head) const {
    return is_q(head) ? q + token * q_token_stride + head * q_head_stride
                      : k + token * k_token_stride + (head - num_q_heads) * k_head_stride;
  }
};

/// \brief A (token, head) position in a `QKHeads` row list that steps forward without a
/// division per step (one division places it).
struct QKHeadCursor {
  int64_t token;            ///< Token index
  int64_t head;             ///< Head index within the token, q heads first
  int64_t heads_per_token;  ///< Heads per token, q and k together (at least 1)

  /// \brief The position of row `row`.
  /// \param row Row index in the list.
  /// \param heads Heads per token, q and k together (at least 1).
  SGL_DEVICE QKHeadCursor(int64_t row, int64_t heads)
      : token(row / heads), head(row - token * heads), heads_per_token(heads) {}

  /// \brief Move forward by `n` rows; costs one subtraction per token crossed.
  /// \param n Rows to move, at least 0.
  SGL_DEVICE void advance(int64_t n) {
    for (head += n; head >= heads_per_token; head -= heads_per_token) ++token;
  }
};

}  // namespace sglang::device
