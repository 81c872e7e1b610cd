-- Slash commands: the server's list (qwen/listCommands, replaced on every
-- available_commands_update), completion of "/name" in the chat's input
-- buffer (an omnifunc, opened by itself when "/" starts the input), and
-- :Qwen {command} [args], which sends "/command args" as a prompt. What a
-- command does is the server's to decide.
local util = require('qwen.util')

local M = {}

--- The commands, sorted by name: { name, description, hint, source }.
M.list = {}
--- True once a list (maybe empty) came from the server.
M.loaded = false

local max_commands = 500

local function valid_name(v)
  return type(v) == 'string' and #v > 0 and #v <= 100 and v:sub(1, 1) ~= '/' and not v:find('[%s%c]')
end

local function one_line(s)
  if type(s) ~= 'string' then
    return ''
  end
  s = vim.trim(s:gsub('%s+', ' '))
  if #s > 500 then
    s = s:sub(1, 497) .. '...'
  end
  return s
end

--- The commands of a qwen/listCommands answer ({ commands = [...] }) or of
--- an available_commands_update's availableCommands (a list). Items that do
--- not fit are skipped; never raises.
function M.parse(v)
  local items = v
  if type(v) == 'table' and type(v.commands) == 'table' then
    items = v.commands
  end
  if type(items) ~= 'table' then
    return {}
  end
  local out, seen = {}, {}
  for _, it in ipairs(items) do
    if #out >= max_commands then
      break
    end
    if type(it) == 'table' and valid_name(it.name) and not seen[it.name] then
      seen[it.name] = true
      local hint = type(it.input) == 'table' and type(it.input.hint) == 'string' and one_line(it.input.hint) or ''
      table.insert(out, {
        name = it.name,
        description = one_line(it.description),
        hint = hint ~= '' and hint or nil,
        source = (it.source == 'user' or it.source == 'project') and it.source or 'builtin',
      })
    end
  end
  table.sort(out, function(a, b)
    return a.name < b.name
  end)
  return out
end

function M.set(list)
  M.list = list
  M.loaded = true
end

function M.reset()
  M.list = {}
  M.loaded = false
end

--- Asks the chat's server for the list (for the chat's session when there
--- is one), starting qwen-ls when needed; cb(list) after.
function M.fetch(cb)
  local session = require('qwen.session')
  session.with_client(function(c)
    local sid = session.session_id
    util.request(c, 'qwen/listCommands', sid and { sessionId = sid } or vim.empty_dict(), function(err, res)
      if sid ~= session.session_id then
        return -- another session meanwhile: its own list follows
      end
      -- a server without commands (-32601) offers none
      M.set(err and {} or M.parse(res))
      if cb then
        cb(M.list)
      end
    end)
  end)
end

--- The list now: what is known, else one short synchronous request when
--- the server is up (completion cannot wait for a callback).
local function current()
  if M.loaded then
    return M.list
  end
  local session = require('qwen.session')
  local c = session.client_id and vim.lsp.get_client_by_id(session.client_id) or require('qwen.client').current(false)
  if c and require('qwen.client').is_ready(c.id) then
    local sid = session.client_id == c.id and session.session_id or nil
    local res = util.request_sync(c, 'qwen/listCommands', sid and { sessionId = sid } or vim.empty_dict(), 2000)
    if res and not res.err then
      M.set(M.parse(res.result))
    elseif res and res.err then
      M.set({})
    end
  end
  return M.list
end

--- The commands for what was typed after "/": names that start with it,
--- then names where it starts a later part ("commit" finds "git:commit"),
--- then names holding it anywhere. Case-insensitive.
function M.match(query)
  local q = (query or ''):lower()
  local prefix, part, inside = {}, {}, {}
  for _, c in ipairs(current()) do
    local n = c.name:lower()
    if n:sub(1, #q) == q then
      table.insert(prefix, c)
    else
      local found = false
      for p in n:gmatch('[^:%-_.]+') do
        if p:sub(1, #q) == q then
          found = true
          break
        end
      end
      if found then
        table.insert(part, c)
      elseif n:find(q, 1, true) then
        table.insert(inside, c)
      end
    end
  end
  local out = prefix
  vim.list_extend(out, part)
  vim.list_extend(out, inside)
  return out
end

function M.find(name)
  for _, c in ipairs(current()) do
    if c.name == name then
      return c
    end
  end
end

--- 'omnifunc' of the chat's input buffer: completes "/name" when it starts
--- the input (first line, first column), nothing elsewhere.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local row, col = unpack(vim.api.nvim_win_get_cursor(0))
    local before = vim.api.nvim_get_current_line():sub(1, col)
    if row == 1 and before:match('^/[^%s/]*$') then
      return 0
    end
    return -3 -- not a command: leave completion quietly
  end
  local items = {}
  local matches = M.match((base or ''):sub(2))
  -- The popup lines up word, kind and menu; the menu holds the argument
  -- hint and the description, so the hints are padded to one width and
  -- the descriptions start in one column.
  local hint_width = 0
  for _, c in ipairs(matches) do
    if c.hint then
      hint_width = math.max(hint_width, vim.fn.strdisplaywidth(c.hint))
    end
  end
  for _, c in ipairs(matches) do
    local menu = c.description
    if hint_width > 0 then
      local hint = c.hint or ''
      menu = hint .. string.rep(' ', hint_width - vim.fn.strdisplaywidth(hint)) .. '  ' .. menu
    end
    if c.source ~= 'builtin' then
      menu = menu .. ' (' .. c.source .. ')'
    end
    table.insert(items, {
      word = '/' .. c.name,
      menu = menu,
      info = c.description,
      kind = c.source == 'builtin' and '' or c.source:sub(1, 1),
      icase = 1,
      user_data = { qwen_command = c.name },
    })
  end
  return items
end

local saved_completeopt = nil

local function restore_completeopt()
  if saved_completeopt then
    vim.o.completeopt = saved_completeopt
    saved_completeopt = nil
  end
end

--- Opens the popup: "/" was typed at the start of the input. Nothing is
--- inserted until a command is chosen (noinsert while the popup is open;
--- the person's 'completeopt' is back when it closes).
function M.popup()
  if vim.fn.pumvisible() == 1 or vim.fn.mode() ~= 'i' then
    return
  end
  if not saved_completeopt then
    saved_completeopt = vim.o.completeopt
  end
  vim.o.completeopt = 'menuone,noinsert'
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<C-x><C-o>', true, false, true), 'n', false)
end

local function key(k)
  return vim.api.nvim_replace_termcodes(k, true, false, true)
end

--- Sets up the chat's input buffer: the omnifunc, the popup on "/", and
--- the key that completes the chosen command (keys.complete, <Tab>).
function M.attach_input(buf, keys)
  vim.api.nvim_buf_set_option(buf, 'omnifunc', "v:lua.require'qwen.commands'.omnifunc")
  local group = vim.api.nvim_create_augroup('qwen-commands-input', { clear = true })
  vim.api.nvim_create_autocmd('TextChangedI', {
    group = group,
    buffer = buf,
    callback = function()
      local row, col = unpack(vim.api.nvim_win_get_cursor(0))
      if row == 1 and col == 1 and vim.api.nvim_get_current_line():sub(1, 1) == '/' then
        if not M.loaded then
          M.fetch()
        end
        M.popup()
      end
    end,
  })
  vim.api.nvim_create_autocmd({ 'CompleteDone', 'InsertLeave' }, {
    group = group,
    buffer = buf,
    callback = restore_completeopt,
  })
  if keys and keys.complete then
    vim.keymap.set('i', keys.complete, function()
      if vim.fn.pumvisible() == 1 then
        -- the highlighted command, else the first one
        return vim.fn.complete_info({ 'selected' }).selected == -1 and key('<C-n><C-y>') or key('<C-y>')
      end
      return key(keys.complete)
    end, { buffer = buf, expr = true, desc = 'qwen: complete the command' })
  end
end

--- :Qwen completion: command names first, then the arguments the server's
--- own pickers know (a model id after "model", a mode after "mode").
function M.complete_cmdline(arglead, cmdline, pos)
  local before = cmdline:sub(1, pos)
  local words = vim.split(vim.trim(before:gsub('^%s*%S+', '', 1)), '%s+', { trimempty = true })
  local typing_name = #words == 0 or (#words == 1 and arglead ~= '')
  if typing_name then
    local slash = arglead:sub(1, 1) == '/' and '/' or ''
    local out = {}
    for _, c in ipairs(M.match(arglead:gsub('^/', ''))) do
      table.insert(out, slash .. c.name)
    end
    return out
  end
  local name = words[1]:gsub('^/', '')
  if name == 'model' and #words <= 2 then
    return require('qwen.model').complete(arglead)
  elseif name == 'mode' and #words <= 2 then
    return vim.tbl_filter(function(m)
      return m:sub(1, #arglead) == arglead
    end, { 'plan', 'default', 'auto-edit', 'yolo' })
  end
  return {}
end

--- :Qwen {command} [args]: sends "/command args" as a prompt. A name the
--- server's list does not hold is refused here (it would go to the model as
--- text); without a list yet, the server decides.
function M.run(args)
  args = vim.trim(args or '')
  if args == '' then
    args = 'help'
  end
  local name, rest = args:match('^/?(%S+)%s*(.*)$')
  if M.loaded and not M.find(name) then
    -- a command file written a moment ago: ask once more before refusing
    M.loaded = false
  end
  local list = current()
  if M.loaded and #list > 0 and not M.find(name) then
    util.notify_user('unknown command /' .. name .. ': :Qwen <Tab> lists the commands', vim.log.levels.WARN)
    return false
  end
  local chat = require('qwen.chat')
  if not chat.is_open() then
    local win = vim.api.nvim_get_current_win()
    chat.open()
    vim.api.nvim_set_current_win(win)
  end
  local buf = vim.api.nvim_get_current_buf()
  if util.is_normal_buffer(buf) then
    chat.last_buf = buf
  end
  return require('qwen.session').prompt('/' .. name .. (rest ~= '' and (' ' .. rest) or ''))
end

return M
