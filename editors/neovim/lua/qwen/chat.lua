-- The chat: a transcript buffer (markdown, streamed) and an input buffer
-- below it. Tool calls are one line each, expandable to their output; the
-- plan is shown where it first appeared and kept up to date.
local config = require('qwen.config')
local util = require('qwen.util')

local M = {}

M.blocks = {}
M.buf = nil -- transcript
M.input = nil -- input buffer
M.last_buf = nil -- the last normal buffer the user was in
local tools = {} -- toolCallId -> block
local reviews = {} -- review id -> its chat line
local plan_block = nil

local status_icon = {
  pending = '…',
  in_progress = '⟳',
  completed = '✓',
  failed = '✗',
  rejected = '✗',
  cancelled = '⊘',
  undone = '↶',
}

local function qwen_meta(u)
  local meta = type(u._meta) == 'table' and u._meta.qwen or nil
  return type(meta) == 'table' and meta or nil
end

--- How a tool call ended, as the server says (_meta.qwen.outcome of its
--- last update), else nil.
local function outcome_of(u)
  local meta = qwen_meta(u)
  local o = meta and meta.outcome or nil
  if type(o) == 'string' and status_icon[o] then
    return o
  end
end

--- A review decided hunk by hunk (_meta.qwen.review): its summary line
--- ("2 of 3 changes kept") and each hunk's decision, or nil.
local function review_of(u)
  local meta = qwen_meta(u)
  local r = meta and meta.review or nil
  if type(r) ~= 'table' or type(r.summary) ~= 'string' then
    return nil
  end
  local hunks = {}
  for _, h in ipairs(type(r.hunks) == 'table' and r.hunks or {}) do
    if type(h) == 'table' and type(h.startLine) == 'number' and type(h.endLine) == 'number' then
      table.insert(hunks, {
        lines = string.format('%d-%d', h.startLine, h.endLine),
        kept = h.kept == true,
        feedback = type(h.feedback) == 'string' and h.feedback ~= '' and h.feedback or nil,
      })
    end
  end
  return { summary = r.summary, hunks = hunks }
end

local function valid(b)
  return b and vim.api.nvim_buf_is_valid(b)
end

local function scratch(name, ft)
  local b = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, b, name)
  vim.api.nvim_buf_set_option(b, 'buftype', 'nofile')
  vim.api.nvim_buf_set_option(b, 'bufhidden', 'hide')
  vim.api.nvim_buf_set_option(b, 'swapfile', false)
  vim.api.nvim_buf_set_option(b, 'filetype', ft)
  return b
end

local function ensure_buffers()
  if not valid(M.buf) then
    M.buf = scratch('qwen://chat', 'markdown')
    vim.api.nvim_buf_set_option(M.buf, 'modifiable', false)
    local km = config.options.keys
    if km.toggle_tool then
      vim.keymap.set('n', km.toggle_tool, function()
        M.toggle_at(vim.api.nvim_win_get_cursor(0)[1])
      end, { buffer = M.buf, desc = 'qwen: expand or collapse the tool call' })
    end
    M.render(1)
  end
  if not valid(M.input) then
    M.input = scratch('qwen://input', 'markdown')
    local km = config.options.keys
    local submit = function()
      M.submit()
    end
    if km.submit then
      vim.keymap.set({ 'n', 'i' }, km.submit, submit, { buffer = M.input, desc = 'qwen: send the prompt' })
    end
    vim.keymap.set('n', '<CR>', submit, { buffer = M.input, desc = 'qwen: send the prompt' })
    require('qwen.commands').attach_input(M.input, km)
  end
end

local function win_of(b)
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(w) == b then
      return w
    end
  end
  return nil
end

--- Opens (or focuses) the chat in a split, with the cursor in the input;
--- with opts.insert, ready to type (Insert mode).
function M.open(opts)
  ensure_buffers()
  local o = config.options.chat
  local tw = win_of(M.buf)
  if not tw then
    local pos = o.position
    if pos == 'tab' then
      vim.cmd('tabnew')
    elseif pos == 'left' then
      vim.cmd('topleft vsplit')
    elseif pos == 'below' then
      vim.cmd('botright split')
    elseif pos == 'above' then
      vim.cmd('topleft split')
    else
      vim.cmd('botright vsplit')
    end
    tw = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(tw, M.buf)
    if pos == 'left' or pos == 'right' then
      vim.api.nvim_win_set_width(tw, o.width)
    elseif pos == 'below' or pos == 'above' then
      vim.api.nvim_win_set_height(tw, o.height)
    end
    vim.api.nvim_win_set_option(tw, 'wrap', true)
    vim.api.nvim_win_set_option(tw, 'linebreak', true)
    vim.api.nvim_win_set_option(tw, 'number', false)
    vim.api.nvim_win_set_option(tw, 'conceallevel', 2)
    -- The header: the winbar where there is one (0.8), else the window's
    -- own statusline.
    local bar = "%{v:lua.require'qwen.chat'.header()}"
    vim.api.nvim_win_set_option(tw, vim.fn.has('nvim-0.8') == 1 and 'winbar' or 'statusline', bar)
  end
  local iw = win_of(M.input)
  if not iw then
    vim.api.nvim_set_current_win(tw)
    vim.cmd('belowright split')
    iw = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(iw, M.input)
    vim.api.nvim_win_set_height(iw, o.input_height)
    vim.api.nvim_win_set_option(iw, 'number', false)
    vim.api.nvim_win_set_option(iw, 'winfixheight', true)
  end
  M.scroll()
  vim.api.nvim_set_current_win(iw)
  if opts and opts.insert then
    vim.cmd('startinsert!')
  end
end

function M.is_open()
  return valid(M.buf) and win_of(M.buf) ~= nil
end

--- Sends the input buffer's text as a prompt.
function M.submit()
  if not valid(M.input) then
    return
  end
  local text = table.concat(vim.api.nvim_buf_get_lines(M.input, 0, -1, false), '\n')
  text = vim.trim(text)
  if text == '' then
    return
  end
  if require('qwen.session').prompt(text) then
    vim.api.nvim_buf_set_lines(M.input, 0, -1, false, {})
  end
end

-- Rendering ---------------------------------------------------------------

local function indent(lines, prefix)
  local out = {}
  for _, l in ipairs(lines) do
    table.insert(out, prefix .. l)
  end
  return out
end

local function tool_output(b)
  local out = {}
  for _, item in ipairs(b.content or {}) do
    if item.type == 'content' and item.content and item.content.text then
      vim.list_extend(out, vim.split(item.content.text, '\n', { plain = true }))
    elseif item.type == 'diff' then
      table.insert(out, 'diff ' .. (item.path or ''))
      local old = util.lines(item.oldText ~= vim.NIL and item.oldText or '')
      local new = util.lines(item.newText or '')
      table.insert(out, string.format('(%d lines -> %d lines)', #old, #new))
    end
  end
  return out
end

local function render_block(b)
  if b.kind == 'user' then
    local lines = { '## You', '' }
    vim.list_extend(lines, vim.split(b.text, '\n', { plain = true }))
    for _, extra in ipairs(b.extra or {}) do
      table.insert(lines, '_' .. extra .. '_')
    end
    table.insert(lines, '')
    table.insert(lines, '## Qwen')
    table.insert(lines, '')
    return lines
  elseif b.kind == 'agent' then
    local lines = vim.split(b.text, '\n', { plain = true })
    if b.after_tool then
      table.insert(lines, 1, '')
    end
    table.insert(lines, '')
    return lines
  elseif b.kind == 'thought' then
    local lines = indent(vim.split(vim.trim(b.text), '\n', { plain = true }), '> ')
    table.insert(lines, '')
    return lines
  elseif b.kind == 'tool' then
    local state = b.outcome or b.status or 'pending'
    local icon = status_icon[state] or ''
    -- What happened, in words: the review's "2 of 3 changes kept" rather
    -- than "completed", and "undone" once its turn was undone.
    local said = b.review and b.review.summary or state
    if b.undone then
      icon, said = status_icon.undone, said .. ', undone'
    end
    local arrow = b.expanded and '▾' or '▸'
    local lines = { string.format('%s %s %s  (%s)', arrow, icon, b.title or b.id, said) }
    if b.expanded then
      local input = {}
      if type(b.input) == 'table' then
        local keys = vim.tbl_keys(b.input)
        table.sort(keys)
        for _, k in ipairs(keys) do
          local v = b.input[k]
          if type(v) ~= 'string' then
            v = vim.json.encode(v)
          end
          local vl = vim.split(v, '\n', { plain = true })
          table.insert(input, k .. ': ' .. vl[1])
          vim.list_extend(input, indent(vim.list_slice(vl, 2), '  '))
        end
      end
      vim.list_extend(lines, indent(input, '    '))
      local out = {}
      for _, h in ipairs(b.review and b.review.hunks or {}) do
        table.insert(out, string.format('lines %s: %s%s', h.lines, h.kept and 'kept' or 'rejected', h.feedback and (' (' .. h.feedback .. ')') or ''))
      end
      vim.list_extend(out, tool_output(b))
      if #out == 0 then
        out = { b.status == 'completed' and '(no output to show)' or '(no output yet)' }
      end
      table.insert(lines, '    ──')
      vim.list_extend(lines, indent(out, '    '))
    end
    return lines
  elseif b.kind == 'plan' then
    local lines = { '', '**Plan**', '' }
    for _, e in ipairs(b.entries or {}) do
      local box = e.status == 'completed' and '[x]' or (e.status == 'in_progress' and '[~]' or '[ ]')
      table.insert(lines, '- ' .. box .. ' ' .. (e.content or ''))
    end
    table.insert(lines, '')
    return lines
  elseif b.kind == 'review' then
    -- Only while the review waits: once decided, the edit's line says
    -- what happened (review_done).
    local key = config.options.keys.toggle_tool
    return { '', 'Review: ' .. b.what .. ' -- :QwenReview' .. (key and (' or ' .. key .. ' here') or '') .. ' to open', '' }
  elseif b.kind == 'note' then
    local lines = indent(vim.split(b.text, '\n', { plain = true }), '')
    lines[1] = '_' .. lines[1]
    lines[#lines] = lines[#lines] .. '_'
    table.insert(lines, '')
    return lines
  end
  return {}
end

--- Scrolls every window showing the transcript to its end, except the one
--- the cursor is in.
function M.scroll()
  if not valid(M.buf) then
    return
  end
  local n = vim.api.nvim_buf_line_count(M.buf)
  local cur = vim.api.nvim_get_current_win()
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if w ~= cur and vim.api.nvim_win_get_buf(w) == M.buf then
      pcall(vim.api.nvim_win_set_cursor, w, { n, 0 })
    end
  end
end

--- Re-renders blocks from index i to the end.
function M.render(i)
  if not valid(M.buf) then
    return
  end
  i = math.max(1, i or 1)
  local start = 0
  if i > 1 and M.blocks[i - 1] then
    local prev = M.blocks[i - 1]
    start = prev.start + prev.count
  end
  local lines = {}
  for j = i, #M.blocks do
    local b = M.blocks[j]
    local bl = render_block(b)
    b.start = start + #lines
    b.count = #bl
    vim.list_extend(lines, bl)
  end
  vim.api.nvim_buf_set_option(M.buf, 'modifiable', true)
  vim.api.nvim_buf_set_lines(M.buf, start, -1, false, lines)
  vim.api.nvim_buf_set_option(M.buf, 'modifiable', false)
  M.scroll()
end

local function index_of(b)
  for i, x in ipairs(M.blocks) do
    if x == b then
      return i
    end
  end
end

local function add(b)
  table.insert(M.blocks, b)
  ensure_buffers()
  M.render(#M.blocks)
  return b
end

local function changed(b)
  ensure_buffers()
  M.render(index_of(b))
end

function M.clear()
  M.blocks = {}
  tools = {}
  reviews = {}
  plan_block = nil
  if valid(M.buf) then
    M.render(1)
  end
end

function M.user_message(text, blocks)
  local extra = {}
  for _, b in ipairs(blocks or {}) do
    if b.type == 'resource' and b.resource then
      table.insert(extra, 'with ' .. vim.fn.fnamemodify(vim.uri_to_fname(b.resource.uri), ':~:.') .. (b.label or ''))
    end
  end
  add({ kind = 'user', text = text, extra = extra })
end

function M.note(text)
  add({ kind = 'note', text = text })
end

function M.on_update(u)
  local kind = u.sessionUpdate
  local last = M.blocks[#M.blocks]
  if kind == 'user_message_chunk' then
    local t = u.content and u.content.text or ''
    if last and last.kind == 'user' and last.replay then
      last.text = last.text .. t
      changed(last)
    else
      add({ kind = 'user', text = t, replay = true })
    end
  elseif kind == 'agent_message_chunk' or kind == 'agent_thought_chunk' then
    local k = kind == 'agent_message_chunk' and 'agent' or 'thought'
    local t = u.content and u.content.text or ''
    if last and last.kind == k then
      last.text = last.text .. t
      changed(last)
    else
      add({ kind = k, text = t, after_tool = last ~= nil and last.kind == 'tool' })
    end
  elseif kind == 'tool_call' then
    local b = tools[u.toolCallId]
    if b then
      b.title, b.status, b.tool_kind = u.title or b.title, u.status or b.status, u.kind or b.tool_kind
      changed(b)
    else
      tools[u.toolCallId] = add({ kind = 'tool', id = u.toolCallId, title = u.title, tool_kind = u.kind, status = u.status or 'pending', content = u.content, input = u.rawInput })
    end
  elseif kind == 'tool_call_update' then
    local b = tools[u.toolCallId]
    if not b then
      b = add({ kind = 'tool', id = u.toolCallId, title = u.title or u.toolCallId, status = 'pending' })
      tools[u.toolCallId] = b
    end
    if u.status then
      b.status = u.status
    end
    local o = outcome_of(u)
    if o then
      b.outcome = o
    elseif u.status == 'completed' or u.status == 'failed' then
      b.outcome = nil
    end
    if o or u.status == 'completed' or u.status == 'failed' then
      -- The last update says it all: how the review went, and whether
      -- the turn was undone.
      b.review = review_of(u)
      local meta = qwen_meta(u)
      b.undone = meta ~= nil and meta.undone == true
    end
    if u.title then
      b.title = u.title
    end
    if u.content ~= nil and u.content ~= vim.NIL then
      b.content = u.content
    end
    changed(b)
  elseif kind == 'plan' then
    if plan_block and index_of(plan_block) then
      plan_block.entries = u.entries or {}
      changed(plan_block)
    else
      plan_block = add({ kind = 'plan', entries = u.entries or {} })
    end
  end
end

function M.turn_end(res)
  local s = '— ' .. (res.stopReason or 'done')
  if type(res.command) == 'string' then
    s = s .. ' · /' .. res.command
  end
  if type(res.usage) == 'table' then
    s = s .. ' · ' .. require('qwen.model').turn_line(res.usage)
  end
  add({ kind = 'note', text = s })
end

--- The chat's header: the session's model and its token totals.
function M.header()
  local status = require('qwen.status')
  local s
  if status.no_model then
    s = 'qwen · no model (:checkhealth qwen)'
  elseif status.missing(status.setup) then
    s = 'qwen · ' .. status.missing(status.setup) .. ' (:checkhealth qwen)'
  else
    s = 'qwen · ' .. (status.model or '…')
  end
  local t = require('qwen.model').totals
  if t.turns > 0 then
    s = s .. ' · session ' .. require('qwen.model').tokens(t.input, t.output, t.cached)
  end
  return s
end

--- Redraws the header after the model or the totals changed.
function M.header_changed()
  if M.is_open() then
    pcall(vim.cmd, 'redrawstatus!')
  end
end

--- The line that says a review is waiting: <CR> on it opens the review.
function M.review_line(id, what)
  reviews[id] = add({ kind = 'review', id = id, what = what })
end

--- The review was decided (or cancelled): its line goes, since the edit's
--- own line says what happened ("2 of 3 changes kept"), as a replay of
--- the session will.
function M.review_done(id)
  local b = reviews[id]
  reviews[id] = nil
  local i = b and index_of(b)
  if i then
    table.remove(M.blocks, i)
    if valid(M.buf) then
      M.render(i)
    end
  end
end

-- Setup problems already told in this Neovim session (reason -> true).
local told = {}

--- What a setup problem's error.data names, in this plugin's terms.
function M.setup_hint(data)
  if type(data) ~= 'table' then
    return nil
  end
  local where = {
    ['model.name'] = 'model.name (setup{ model = { name = ... } } or ~/.qwen/settings.json)',
    ['model.baseUrl'] = 'model.baseUrl (setup{ model = { baseUrl = ... } } or ~/.qwen/settings.json)',
    ['model.apiKey'] = 'model.apiKey (~/.qwen/settings.json)',
  }
  local parts = {}
  local settings = type(data.settings) == 'table' and data.settings or {}
  local env = type(data.env) == 'table' and data.env or {}
  local key_var = false
  for _, v in ipairs(env) do
    key_var = key_var or (type(v) == 'string' and v:find('KEY', 1, true) ~= nil)
  end
  local s = {}
  for _, k in ipairs(settings) do
    -- env.<KEY> of the settings is a variable, and an API key belongs in
    -- cmd_env (or the environment) here, not in a settings file: both
    -- are named as variables below.
    if type(k) == 'string' and not k:match('^env%.') and not (k == 'model.apiKey' and key_var) then
      table.insert(s, where[k] or k)
    end
  end
  if #s > 0 then
    table.insert(parts, 'set ' .. table.concat(s, ', '))
  end
  if #env > 0 then
    table.insert(parts, (#parts > 0 and 'or ' or 'set ') .. table.concat(env, ', ') .. ' (in cmd_env or the environment)')
  end
  if #parts == 0 then
    return nil
  end
  return table.concat(parts, ' ')
end

--- Forgets which setup problems were told (a new session of the plugin).
function M.reset_told()
  told = {}
end

function M.turn_error(err)
  local msg = err.message or vim.inspect(err)
  local data = type(err.data) == 'table' and err.data or nil
  if data and (data.reason == 'no_model' or require('qwen.status').missing(data)) then
    -- The statusline names what is missing from now on.
    require('qwen.status').set_setup(data)
  end
  local hint = M.setup_hint(data)
  local text = 'error: ' .. msg
  if hint then
    text = text .. '\nTo fix it: ' .. hint .. '. :checkhealth qwen tries the model.'
  end
  add({ kind = 'note', text = text })
  -- A setup problem is told once per Neovim session; the chat still says
  -- it on every turn.
  local key = data and type(data.reason) == 'string' and data.reason or nil
  if key and told[key] then
    return
  end
  if key then
    told[key] = true
  end
  -- A message this long stops Neovim at a hit-enter prompt: not while the
  -- person types (the next prompt, say), or it would take their keys.
  util.when_not_typing(function()
    util.notify_user(msg .. (hint and (' To fix it: ' .. hint .. '.') or ''), vim.log.levels.ERROR)
  end)
end

--- Expands or collapses the tool call shown at (1-based) line lnum.
function M.toggle_at(lnum)
  for i, b in ipairs(M.blocks) do
    if b.kind == 'review' and b.start and lnum - 1 >= b.start and lnum - 1 < b.start + b.count then
      local review = require('qwen.review')
      local r = review.reviews[b.id]
      if r then
        review.open(r)
      end
      return true
    end
    if b.kind == 'tool' and b.start and lnum - 1 >= b.start and lnum - 1 < b.start + b.count then
      b.expanded = not b.expanded
      M.render(i)
      return true
    end
  end
  return false
end

function M.last_file_buffer()
  if M.last_buf and util.is_normal_buffer(M.last_buf) then
    return M.last_buf
  end
  return nil
end

function M.lines()
  if not valid(M.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(M.buf, 0, -1, false)
end

return M
