-- Inline review of qwen/proposeEdit in the target buffer. The buffer is
-- never changed here: deleted lines are highlighted and new lines shown as
-- virtual lines, one group of extmarks per hunk. When every hunk is decided
-- the decision goes to the server with qwen/resolveReview (the request was
-- answered "deferred" at once, protocol.md §6.5), and the server applies the
-- result with workspace/applyEdit, one undo step.
--
-- A review never takes the keyboard: it arrives without moving the cursor,
-- the current window or tab, or the mode. It is announced (one notify, the
-- statusline, a line in the chat) and opens only when asked (:QwenReview,
-- or <CR> on its chat line).
local config = require('qwen.config')
local util = require('qwen.util')
local status = require('qwen.status')

local M = {}

M.ns = vim.api.nvim_create_namespace('qwen-review')
M.reviews = {} -- toolCallId -> review
local seq = 0 -- arrival order of reviews

local function define_highlights()
  local function link(name, to)
    vim.api.nvim_set_hl(0, name, { link = to, default = true })
  end
  link('QwenReviewDelete', 'DiffDelete')
  link('QwenReviewAdd', 'DiffAdd')
  link('QwenReviewHeader', 'Title')
  link('QwenReviewHint', 'Comment')
  link('QwenReviewRejected', 'Comment')
  link('QwenReviewAccepted', 'DiffText')
  link('QwenReviewAddSign', 'DiffAdd')
  link('QwenReviewDeleteSign', 'DiffDelete')
end

local function client_of(r)
  return vim.lsp.get_client_by_id(r.client_id)
end

local function encoding(r)
  local c = client_of(r)
  return c and c.offset_encoding or 'utf-16'
end

--- The review whose buffer is buf (the current buffer by default).
function M.for_buffer(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  for _, r in pairs(M.reviews) do
    if r.buf == buf or r.edit_buf == buf then
      return r
    end
  end
end

--- The open reviews, oldest first.
function M.list()
  local out = {}
  for _, r in pairs(M.reviews) do
    table.insert(out, r)
  end
  table.sort(out, function(a, b)
    return (a.seq or 0) < (b.seq or 0)
  end)
  return out
end

local function pending_count(r)
  local n = 0
  for _, h in ipairs(r.hunks) do
    if h.state == 'pending' then
      n = n + 1
    end
  end
  return n
end

--- Puts the number of undecided hunks on the statusline.
local function update_status()
  local n = 0
  for _, r in pairs(M.reviews) do
    if r.shown then
      n = n + pending_count(r)
    end
  end
  status.set({ review = n > 0 and n or vim.NIL })
end

local function rel(path)
  return vim.fn.fnamemodify(path, ':~:.')
end

-- Geometry ----------------------------------------------------------------

local function line_count(r)
  return vim.api.nvim_buf_line_count(r.buf)
end

--- The hunk's first old line (0-based) now, following the user's typing.
local function hunk_start(r, h)
  if h.anchor then
    local pos = vim.api.nvim_buf_get_extmark_by_id(r.buf, M.ns, h.anchor, {})
    if pos and pos[1] then
      return pos[1] + (h.anchor_below and 1 or 0)
    end
  end
  return h.s
end

--- The buffer rows (0-based, end exclusive) where the cursor is "on" the
--- hunk: its removed lines, or for an insertion the line below it (the
--- last line for an insertion at the end).
local function hunk_rows(r, h)
  local s = math.min(hunk_start(r, h), line_count(r) - 1)
  return s, s + math.max(h.e - h.s, 1)
end

--- A key as the person types it: <localleader>a as \a.
function M.key_label(lhs)
  local function leader(v)
    v = v or ''
    local s = (v == '' and '\\' or v):gsub('%%', '%%%%')
    return s
  end
  lhs = lhs:gsub('<[Ll]ocal[Ll]eader>', leader(vim.g.maplocalleader))
  lhs = lhs:gsub('<[Ll]eader>', leader(vim.g.mapleader))
  return lhs
end

local function key_hint()
  local k = config.options.keys
  local parts = {}
  local function add(lhs, what)
    if lhs then
      table.insert(parts, M.key_label(lhs) .. ' ' .. what)
    end
  end
  add(k.accept_hunk, 'accept')
  add(k.reject_hunk, 'reject')
  add(k.accept_all, 'all')
  add(k.reject_all, 'reject all')
  add(k.edit_proposal, 'edit')
  add(k.reject_with_feedback, 'reject with feedback')
  if k.next_hunk and k.prev_hunk then
    table.insert(parts, M.key_label(k.next_hunk) .. '/' .. M.key_label(k.prev_hunk) .. ' move')
  end
  return table.concat(parts, ' · ')
end

local function clear_hunk(r, h)
  for _, id in ipairs(h.marks or {}) do
    pcall(vim.api.nvim_buf_del_extmark, r.buf, M.ns, id)
  end
  h.marks = {}
  h.anchor = nil
end

-- Virtual text expands a tab from the virtual line's own start; expanding
-- it here keeps the new lines aligned with the buffer's text.
local function expand_tabs(line, ts)
  if not line:find('\t', 1, true) then
    return line
  end
  local out, col = {}, 0
  for ch in line:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    if ch == '\t' then
      local n = ts - (col % ts)
      table.insert(out, string.rep(' ', n))
      col = col + n
    else
      table.insert(out, ch)
      col = col + vim.fn.strdisplaywidth(ch)
    end
  end
  return table.concat(out)
end

local function render_hunk(r, i)
  local h = r.hunks[i]
  local s = hunk_start(r, h)
  clear_hunk(r, h)
  local n = line_count(r)
  local label = ({ pending = 'pending', accepted = 'accepted', rejected = 'rejected' })[h.state]
  if h.state == 'rejected' and h.feedback then
    label = label .. ': ' .. status.cut(h.feedback, status.max_detail)
  end
  local header = {
    { string.format('── qwen: hunk %d/%d %s ', i, #r.hunks, label), 'QwenReviewHeader' },
  }
  if h.state == 'pending' then
    table.insert(header, { '  ' .. key_hint(), 'QwenReviewHint' })
  end
  local add_hl = h.state == 'rejected' and 'QwenReviewRejected' or 'QwenReviewAdd'
  -- New lines start in the window's left column with a "+" where the
  -- signs are, so they line up with the text (and read as a diff in a
  -- plain-text capture too); removed lines get a "-" sign.
  local win = vim.fn.bufwinid(r.buf)
  local off = 2
  if win ~= -1 then
    local info = vim.fn.getwininfo(win)[1]
    off = math.max(info and info.textoff or 2, 2)
  end
  local plus = h.state == 'rejected' and 'x' or '+'
  local lead = { plus .. string.rep(' ', off - 1), h.state == 'rejected' and 'QwenReviewRejected' or 'QwenReviewAddSign' }
  local added = {}
  if not r.new_file then
    local ts = vim.api.nvim_buf_get_option(r.buf, 'tabstop')
    for _, l in ipairs(h.new_lines) do
      table.insert(added, { lead, { expand_tabs(l, ts), add_hl } })
    end
  end
  local len = h.e - h.s
  local function mark(row, opts)
    local ok, id = pcall(vim.api.nvim_buf_set_extmark, r.buf, M.ns, row, 0, opts)
    if ok then
      table.insert(h.marks, id)
    end
    return ok and id or nil
  end
  if r.new_file then
    h.anchor = mark(0, { virt_lines = { header }, virt_lines_above = true, virt_lines_leftcol = true })
    local last = vim.api.nvim_buf_get_lines(r.buf, n - 1, n, false)[1] or ''
    mark(0, { end_row = n - 1, end_col = #last, hl_group = h.state == 'rejected' and 'QwenReviewRejected' or 'QwenReviewAdd', hl_eol = true, priority = 200 })
    return
  end
  if s >= n then
    -- An insertion after the last line: everything hangs below it.
    local lines = { header }
    vim.list_extend(lines, added)
    h.anchor = mark(n - 1, { virt_lines = lines, virt_lines_leftcol = true })
    h.anchor_below = true
    return
  end
  h.anchor_below = false
  if len == 0 then
    local lines = { header }
    vim.list_extend(lines, added)
    h.anchor = mark(s, { virt_lines = lines, virt_lines_above = true, virt_lines_leftcol = true })
    return
  end
  h.anchor = mark(s, { virt_lines = { header }, virt_lines_above = true, virt_lines_leftcol = true })
  if h.state ~= 'rejected' then
    local last_row = math.min(s + len, n) - 1
    local last = vim.api.nvim_buf_get_lines(r.buf, last_row, last_row + 1, false)[1] or ''
    mark(s, { end_row = last_row, end_col = #last, hl_group = 'QwenReviewDelete', hl_eol = true, priority = 200 })
    for row = s, last_row do
      mark(row, { sign_text = '-', sign_hl_group = 'QwenReviewDeleteSign' })
    end
  end
  if #added > 0 then
    mark(math.min(s + len, n) - 1, { virt_lines = added, virt_lines_leftcol = true })
  end
end

local function render(r)
  for i = 1, #r.hunks do
    render_hunk(r, i)
  end
end

-- Windows ------------------------------------------------------------------

local function is_qwen_buf(b)
  local name = vim.api.nvim_buf_get_name(b)
  return name:match('^qwen[%w-]*://') ~= nil
end

--- Shows buf in a window of the current tab: one already showing it, else
--- a window with a normal file buffer, else a new split.
local function show_in_window(buf)
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(w) == buf then
      vim.api.nvim_set_current_win(w)
      return w
    end
  end
  local target
  local last = require('qwen.chat').last_buf
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local b = vim.api.nvim_win_get_buf(w)
    local cfg = vim.api.nvim_win_get_config(w)
    if cfg.relative == '' and not is_qwen_buf(b) and vim.api.nvim_buf_get_option(b, 'buftype') == '' then
      if b == last or not target then
        target = w
      end
    end
  end
  if target then
    vim.api.nvim_set_current_win(target)
    if pcall(vim.api.nvim_win_set_buf, target, buf) then
      return target
    end
  else
    -- Only qwen windows: open the file left of them.
    vim.api.nvim_set_current_win(vim.api.nvim_tabpage_list_wins(0)[1])
  end
  vim.cmd('aboveleft vsplit')
  local w = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(w, buf)
  return w
end

-- Decisions ------------------------------------------------------------------

local function cleanup(r)
  M.reviews[r.id] = nil
  if r.augroup then
    pcall(vim.api.nvim_del_augroup_by_id, r.augroup)
  end
  if r.buf and vim.api.nvim_buf_is_valid(r.buf) then
    vim.api.nvim_buf_clear_namespace(r.buf, M.ns, 0, -1)
    for _, lhs in ipairs(r.maps or {}) do
      pcall(vim.keymap.del, 'n', lhs, { buffer = r.buf })
    end
    for _, saved in ipairs(r.saved_maps or {}) do
      if vim.fn.exists('*mapset') == 1 then
        pcall(vim.fn.mapset, 'n', false, saved)
      end
    end
  end
  if r.edit_buf and vim.api.nvim_buf_is_valid(r.edit_buf) then
    pcall(vim.api.nvim_buf_delete, r.edit_buf, { force = true })
  end
  if r.new_file and r.buf and vim.api.nvim_buf_is_valid(r.buf) then
    pcall(vim.api.nvim_buf_delete, r.buf, { force = true })
  end
  update_status()
end

--- Sends the decision and ends the review. outcome is nil when
--- extra.keptHunks carries the decision (the server builds it); what says
--- it in the chat then.
local function finish(r, outcome, extra, what)
  if not M.reviews[r.id] then
    return
  end
  cleanup(r)
  local params = { sessionId = r.session_id, toolCallId = r.id, outcome = outcome }
  for k, v in pairs(extra or {}) do
    params[k] = v
  end
  r.answer = params
  local c = client_of(r)
  if not c then
    return
  end
  util.request(c, 'qwen/resolveReview', params, function(err)
    if err then
      util.notify_user('the review could not be sent: ' .. (err.message or ''), vim.log.levels.ERROR)
    end
  end)
  what = what or outcome
  if extra and extra.finalText then
    what = 'accepted with your changes'
  end
  util.notify_user(string.format('%s: %s', rel(r.path), what))
  require('qwen.chat').review_done(r.id)
end

--- The proposal without the rejected hunks, to edit by hand.
local function proposal_text(r)
  local edits = {}
  for _, h in ipairs(r.hunks) do
    if h.state ~= 'rejected' then
      table.insert(edits, h.edit)
    end
  end
  return util.apply_edits(r.old, edits, encoding(r))
end

--- What a review decided hunk by hunk says, as the edit's chat line will
--- (the server's _meta.qwen.review): "2 of 3 changes kept".
function M.kept_line(kept, total)
  if kept == 0 then
    return 'rejected'
  elseif kept == total then
    return 'accepted'
  end
  return string.format('%d of %d changes kept', kept, total)
end

local function check_done(r)
  local kept, reasons = {}, {}
  local same = nil -- the one reason every hunk was rejected with, if so
  for i, h in ipairs(r.hunks) do
    if h.state == 'pending' then
      return false
    elseif h.state == 'accepted' then
      table.insert(kept, i - 1)
    elseif h.feedback then
      table.insert(reasons, { hunk = i - 1, feedback = h.feedback })
    end
  end
  if #kept == 0 and #reasons == #r.hunks then
    same = reasons[1].feedback
    for _, x in ipairs(reasons) do
      if x.feedback ~= same then
        same = nil
        break
      end
    end
  end
  if r.new_file or (same and #kept == 0) then
    -- One hunk stands for the whole new file; and one reason for every
    -- hunk is the edit's feedback.
    local fb = same or (r.hunks[1] and r.hunks[1].feedback)
    finish(r, #kept > 0 and 'accepted' or 'rejected', (#kept == 0 and fb) and { feedback = fb } or nil)
  else
    -- The server turns the kept hunks (indices into its edits) into the
    -- answer, and tells the model each rejected hunk's reason.
    local extra = { keptHunks = kept }
    if #reasons > 0 then
      extra.hunkFeedback = reasons
    end
    finish(r, nil, extra, M.kept_line(#kept, #r.hunks))
  end
  return true
end

local function hunk_at(r, row)
  if r.new_file then
    return 1
  end
  for i, h in ipairs(r.hunks) do
    local s, e = hunk_rows(r, h)
    if row >= s and row < e then
      return i
    end
  end
end

local function cursor_row()
  return vim.api.nvim_win_get_cursor(0)[1] - 1
end

--- Moves the cursor of the current window (when it shows the review) to
--- hunk i.
function M.goto_hunk(r, i)
  local h = r.hunks[i]
  if not h then
    return
  end
  local s = hunk_rows(r, h)
  local win = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(win) ~= r.buf then
    win = vim.fn.bufwinid(r.buf)
  end
  if win ~= -1 then
    pcall(vim.api.nvim_win_set_cursor, win, { s + 1, 0 })
  end
end

local function first_pending(r)
  for i, h in ipairs(r.hunks) do
    if h.state == 'pending' then
      return i
    end
  end
end

--- Decides the hunk i (default: under the cursor): 'accepted' or 'rejected'.
--- The cursor stays where it is: the next hunk is one ]h away.
function M.decide(r, state, i)
  i = i or hunk_at(r, cursor_row())
  if not i then
    local k = config.options.keys
    util.notify_user('the cursor is not on a hunk' .. (k.next_hunk and ('; ' .. M.key_label(k.next_hunk) .. ' goes to the next one') or ''), vim.log.levels.WARN)
    return
  end
  r.hunks[i].state = state
  render_hunk(r, i)
  if not check_done(r) then
    update_status()
  end
end

function M.decide_all(r, state)
  for _, h in ipairs(r.hunks) do
    h.state = state
  end
  check_done(r)
end

--- Goes to the next (dir > 0) or previous hunk; stops at the last and the
--- first one (no wrapping around).
function M.move(r, dir)
  local row = cursor_row()
  local order = {}
  for i, h in ipairs(r.hunks) do
    table.insert(order, { i = i, s = hunk_rows(r, h) })
  end
  if dir > 0 then
    for _, o in ipairs(order) do
      if o.s > row then
        return M.goto_hunk(r, o.i)
      end
    end
  else
    for k = #order, 1, -1 do
      if order[k].s < row then
        return M.goto_hunk(r, order[k].i)
      end
    end
  end
  local k = config.options.keys
  local key = dir > 0 and k.next_hunk or k.prev_hunk
  if key then
    util.notify_user(dir > 0 and 'this is the last hunk' or 'this is the first hunk')
  end
end

--- Rejects with a reason: the hunk under the cursor, or, with the cursor
--- on no hunk (or from outside the review), every hunk not decided yet.
--- The hunks already accepted stay accepted; the reason goes to the model
--- with the hunks it was given for.
function M.reject_with_feedback(r, feedback)
  local targets = {}
  local here = vim.api.nvim_get_current_buf() == r.buf and hunk_at(r, cursor_row()) or nil
  if here then
    targets = { here }
  else
    for i, h in ipairs(r.hunks) do
      if h.state == 'pending' then
        table.insert(targets, i)
      end
    end
  end
  if #targets == 0 then
    util.notify_user('every hunk is decided already', vim.log.levels.WARN)
    return
  end
  local function apply(text)
    if not M.reviews[r.id] then
      return
    end
    text = vim.trim(text or '')
    for _, i in ipairs(targets) do
      r.hunks[i].state = 'rejected'
      r.hunks[i].feedback = text ~= '' and text or nil
      render_hunk(r, i)
    end
    if not check_done(r) then
      update_status()
    end
  end
  if feedback then
    return apply(feedback)
  end
  local prompt
  if here and #r.hunks > 1 then
    prompt = string.format('Why reject hunk %d/%d? ', here, #r.hunks)
  elseif #targets < #r.hunks then
    prompt = string.format('Why reject the %d undecided hunk%s? ', #targets, #targets == 1 and '' or 's')
  else
    prompt = 'Why reject this edit? '
  end
  vim.ui.input({ prompt = prompt }, function(text)
    if text == nil then
      return -- dismissed: the review stays open
    end
    apply(text)
  end)
end

function M.close(r)
  finish(r, 'rejected')
end

--- Opens the proposal (without the hunks already rejected) in a scratch
--- buffer; writing it (:w) accepts its text as the final text.
function M.edit_proposal(r)
  if r.edit_buf and vim.api.nvim_buf_is_valid(r.edit_buf) then
    local w = vim.fn.bufwinid(r.edit_buf)
    if w ~= -1 then
      vim.api.nvim_set_current_win(w)
      return r.edit_buf
    end
  else
    local b = vim.api.nvim_create_buf(false, true)
    pcall(vim.api.nvim_buf_set_name, b, 'qwen-edit://' .. r.path)
    vim.api.nvim_buf_set_option(b, 'buftype', 'acwrite')
    vim.api.nvim_buf_set_option(b, 'bufhidden', 'wipe')
    vim.api.nvim_buf_set_option(b, 'swapfile', false)
    local text = r.new_file and r.new or proposal_text(r)
    vim.api.nvim_buf_set_lines(b, 0, -1, false, util.lines(text))
    vim.api.nvim_buf_set_option(b, 'modified', false)
    local ft = util.filetype_for(r.path, b)
    if ft then
      vim.api.nvim_buf_set_option(b, 'filetype', ft)
    end
    vim.api.nvim_create_autocmd('BufWriteCmd', {
      buffer = b,
      callback = function()
        M.submit_edit(r)
      end,
    })
    r.edit_buf = b
  end
  local w = vim.fn.bufwinid(r.buf)
  if w ~= -1 then
    vim.api.nvim_set_current_win(w)
  end
  vim.cmd('belowright split')
  vim.api.nvim_win_set_buf(0, r.edit_buf)
  r.opened = true
  util.notify_user('edit the proposal, then :w to accept it (closing this window returns to the review)')
  return r.edit_buf
end

--- Accepts the edit buffer's text as the final text.
function M.submit_edit(r)
  local b = r.edit_buf
  if not b or not vim.api.nvim_buf_is_valid(b) then
    return
  end
  local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
  -- The buffer has no notion of a final newline: keep the proposal's.
  if r.new:sub(-1) == '\n' then
    text = text .. '\n'
  end
  vim.api.nvim_buf_set_option(b, 'modified', false)
  local w = vim.fn.bufwinid(b)
  if w ~= -1 and #vim.api.nvim_tabpage_list_wins(0) > 1 then
    pcall(vim.api.nvim_win_close, w, true)
  end
  if text == r.new then
    finish(r, 'accepted')
  else
    finish(r, 'accepted', { finalText = text })
  end
end

-- Start and end ------------------------------------------------------------

-- The review actions, by name: the <Plug> mappings, :QwenReview's
-- arguments and the keys of setup{ keys = ... } share these names.
M.actions = {
  accept_hunk = { plug = 'qwen-accept-hunk', desc = 'accept the hunk', fn = function(r) M.decide(r, 'accepted') end },
  reject_hunk = { plug = 'qwen-reject-hunk', desc = 'reject the hunk', fn = function(r) M.decide(r, 'rejected') end },
  accept_all = { plug = 'qwen-accept-all', desc = 'accept every hunk', fn = function(r) M.decide_all(r, 'accepted') end },
  reject_all = { plug = 'qwen-reject-all', desc = 'reject every hunk', fn = function(r) M.decide_all(r, 'rejected') end },
  next_hunk = { plug = 'qwen-next-hunk', desc = 'next hunk', fn = function(r) M.move(r, 1) end },
  prev_hunk = { plug = 'qwen-prev-hunk', desc = 'previous hunk', fn = function(r) M.move(r, -1) end },
  edit_proposal = { plug = 'qwen-edit-proposal', desc = 'edit the proposal', fn = function(r) M.edit_proposal(r) end },
  reject_with_feedback = { plug = 'qwen-reject-with-feedback', desc = 'reject with feedback', fn = function(r) M.reject_with_feedback(r) end },
  close_review = { plug = 'qwen-close-review', desc = 'close (reject)', fn = function(r) M.close(r) end },
}
M.action_order = { 'next_hunk', 'prev_hunk', 'accept_hunk', 'reject_hunk', 'accept_all', 'reject_all', 'edit_proposal', 'reject_with_feedback', 'close_review' }

--- Defines <Plug>(qwen-...) for every review action: they act on the
--- review of the current buffer.
function M.define_plugs()
  for _, name in ipairs(M.action_order) do
    local a = M.actions[name]
    vim.keymap.set('n', '<Plug>(' .. a.plug .. ')', function()
      local r = M.for_buffer()
      if not r then
        util.notify_user('no review in this buffer; :QwenReview opens one', vim.log.levels.WARN)
        return
      end
      a.fn(r)
    end, { desc = 'qwen review: ' .. a.desc })
  end
end

local function set_keymaps(r)
  local k = config.options.keys
  r.maps, r.saved_maps = {}, {}
  M.define_plugs()
  vim.api.nvim_buf_call(r.buf, function()
    for _, name in ipairs(M.action_order) do
      local lhs = k[name]
      if lhs then
        local saved = vim.fn.maparg(lhs, 'n', false, true)
        if type(saved) == 'table' and saved.buffer == 1 then
          table.insert(r.saved_maps, saved)
        end
        vim.keymap.set('n', lhs, '<Plug>(' .. M.actions[name].plug .. ')', { buffer = r.buf, remap = true, desc = 'qwen review: ' .. M.actions[name].desc })
        table.insert(r.maps, lhs)
      end
    end
  end)
end

local function arm_leave(r)
  if r.augroup then
    return
  end
  r.augroup = vim.api.nvim_create_augroup('qwen-review-' .. r.id, { clear = true })
  vim.api.nvim_create_autocmd('BufWinLeave', {
    group = r.augroup,
    buffer = r.buf,
    callback = function()
      -- Leaving a review you opened (:q, :e other, closing the window)
      -- rejects it.
      vim.schedule(function()
        if M.reviews[r.id] and vim.fn.bufwinid(r.buf) == -1 then
          finish(r, 'rejected')
        end
      end)
    end,
  })
end

--- Opens the review (the oldest one by default) in a window of the current
--- tab and puts the cursor on its first undecided hunk. Only ever on the
--- person's request.
function M.open(r)
  r = r or M.list()[1]
  if not r then
    util.notify_user('no edit is waiting for review')
    return
  end
  if not r.shown then
    return -- not ready yet; the announcement comes when it is
  end
  show_in_window(r.buf)
  r.opened = true
  arm_leave(r)
  render(r) -- lined up with this window's sign and number columns
  M.goto_hunk(r, first_pending(r) or 1)
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'QwenReviewOpen', modeline = false })
  return r
end

--- :QwenReview [action]: without an action opens the oldest review; with
--- one (accept_all, reject_all, close_review ...) decides it from anywhere.
function M.command(arg)
  arg = vim.trim(arg or ''):gsub('%-', '_')
  if arg == '' or arg == 'open' then
    return M.open()
  end
  local a = M.actions[arg]
  if not a then
    util.notify_user('unknown :QwenReview action ' .. arg .. '; use ' .. table.concat(M.action_order, ', '), vim.log.levels.ERROR)
    return
  end
  local here = M.for_buffer()
  local r = here or M.list()[1]
  if not r then
    util.notify_user('no edit is waiting for review')
    return
  end
  -- The hunk actions work on the hunk under the cursor: in the review.
  local per_hunk = { accept_hunk = true, reject_hunk = true, next_hunk = true, prev_hunk = true }
  if per_hunk[arg] and not here then
    util.notify_user(':QwenReview opens the review first; from here, accept-all or reject-all', vim.log.levels.WARN)
    return
  end
  a.fn(r)
end

--- Builds the review (buffer, marks, keys) without touching windows,
--- cursor or mode, and announces it.
local function show(r)
  if not M.reviews[r.id] then
    return -- cancelled before it could be shown
  end
  define_highlights()
  if r.new_file then
    local b = vim.api.nvim_create_buf(false, true)
    pcall(vim.api.nvim_buf_set_name, b, 'qwen-new://' .. r.path)
    vim.api.nvim_buf_set_option(b, 'buftype', 'nofile')
    vim.api.nvim_buf_set_option(b, 'bufhidden', 'hide')
    vim.api.nvim_buf_set_option(b, 'swapfile', false)
    vim.api.nvim_buf_set_lines(b, 0, -1, false, util.lines(r.new))
    vim.api.nvim_buf_set_option(b, 'modifiable', false)
    local ft = util.filetype_for(r.path, b)
    if ft then
      vim.api.nvim_buf_set_option(b, 'filetype', ft)
    end
    r.buf = b
    r.hunks = { { edit = { range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } }, newText = r.new }, s = 0, e = 0, new_lines = {}, state = 'pending' } }
  else
    local b = vim.fn.bufadd(r.path)
    vim.fn.bufload(b)
    vim.api.nvim_buf_set_option(b, 'buflisted', true)
    r.buf = b
    if util.buf_text(b) ~= r.old then
      util.notify_user('the buffer changed since this edit was proposed; the hunks are shown where they were computed', vim.log.levels.WARN)
    end
  end
  render(r)
  set_keymaps(r)
  r.shown = true
  update_status()
  local n = #r.hunks
  local what = string.format('%s (%d hunk%s)', rel(r.path), n, n == 1 and '' or 's')
  require('qwen.chat').review_line(r.id, what)
  util.notify_fit('review ' .. what .. ': :QwenReview to open', 'an edit waits for review: :QwenReview')
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'QwenReview', modeline = false })
end

--- Handles qwen/proposeEdit: answers "deferred" at once, shows the review.
function M.on_propose(params, client_id)
  local path = require('qwen.paths').from_uri(params.uri)
  local r = {
    id = params.toolCallId,
    session_id = params.sessionId,
    client_id = client_id,
    title = params.title,
    uri = params.uri,
    path = path,
    old = params.oldText or '',
    new = params.newText or '',
    new_file = params.isNewFile == true,
    hunks = {},
  }
  for _, e in ipairs(params.edits or {}) do
    local s, e2 = e.range.start.line, e.range['end'].line
    if e.range['end'].character > 0 then
      e2 = e2 + 1
    end
    table.insert(r.hunks, { edit = e, s = s, e = e2, new_lines = util.lines(e.newText), state = 'pending' })
  end
  if #r.hunks == 0 and not r.new_file then
    -- Nothing to review: the proposal changes nothing.
    return { outcome = 'accepted' }
  end
  seq = seq + 1
  r.seq = seq
  M.reviews[r.id] = r
  vim.schedule(function()
    local ok, err = pcall(show, r)
    if not ok then
      util.notify_user('could not show the review: ' .. tostring(err), vim.log.levels.ERROR)
      if M.reviews[r.id] then
        finish(r, 'cancelled')
      end
    end
  end)
  return { outcome = 'deferred' }
end

function M.on_cancelled(params, client_id)
  local r = M.reviews[params.toolCallId]
  if not r or r.client_id ~= client_id or r.session_id ~= params.sessionId then
    return
  end
  if r.buf then
    cleanup(r)
  else
    M.reviews[r.id] = nil
    update_status()
  end
  require('qwen.chat').review_done(r.id)
  util.notify_user('the review of ' .. rel(r.path) .. ' was cancelled')
end

function M.on_exit(client_id)
  for _, r in pairs(M.reviews) do
    if r.client_id == client_id then
      if r.buf then
        cleanup(r)
      else
        M.reviews[r.id] = nil
        update_status()
      end
    end
  end
end

return M
