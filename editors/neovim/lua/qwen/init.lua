-- qwen.nvim: the Qwen Code agent in Neovim, through qwen-ls.
-- Requiring this module is cheap: the other modules load when first used.
local M = {}

local configured = false

local function config()
  return require('qwen.config')
end

--- Configures the plugin and starts attaching qwen-ls to file buffers.
--- See :help qwen-setup.
function M.setup(opts)
  config().set(opts)
  configured = true
  local client = require('qwen.client')
  client.reset()
  local group = vim.api.nvim_create_augroup('qwen', { clear = true })
  if config().options.autostart then
    vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
      group = group,
      callback = function(ev)
        client.attach(ev.buf)
      end,
    })
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) then
        client.attach(b)
      end
    end
  end
  vim.api.nvim_create_autocmd({ 'BufEnter', 'CursorHold' }, {
    group = group,
    callback = function(ev)
      local util = require('qwen.util')
      if util.file_name(ev.buf) then
        require('qwen.chat').last_buf = ev.buf
        require('qwen.session').send_focus(ev.buf)
      end
    end,
  })
  -- When each buffer's diagnostics last changed, for qwen/diagnostics'
  -- wait for a version (qwen/lsp.lua).
  require('qwen.lsp').track()
  pcall(vim.api.nvim_create_autocmd, 'DiagnosticChanged', {
    group = group,
    callback = function(ev)
      require('qwen.lsp').on_diagnostic_changed(ev)
    end,
  })
  pcall(vim.api.nvim_create_autocmd, 'LspNotify', {
    group = group,
    callback = function(ev)
      require('qwen.lsp').on_notify(ev)
    end,
  })
  -- Leaving Visual mode sends the selection (ModeChanged is in 0.7 too).
  pcall(vim.api.nvim_create_autocmd, 'ModeChanged', {
    group = group,
    pattern = { 'v:*', 'V:*', '\22:*' },
    callback = function()
      -- <abuf> is not the current buffer for ModeChanged on 0.7
      local buf = vim.api.nvim_get_current_buf()
      local util = require('qwen.util')
      if not util.is_normal_buffer(buf) then
        return
      end
      vim.schedule(function()
        if not vim.api.nvim_buf_is_valid(buf) then
          return
        end
        local s, e = vim.api.nvim_buf_get_mark(buf, '<'), vim.api.nvim_buf_get_mark(buf, '>')
        if s[1] == 0 or e[1] == 0 then
          return
        end
        require('qwen.chat').last_buf = buf
        require('qwen.session').send_focus(buf, {
          start = { s[1] - 1, s[2] },
          ['end'] = { e[1] - 1, e[2] + 1 },
        })
      end)
    end,
  })
  return M
end

local function ensure()
  if not configured then
    M.setup({})
  end
end

--- :QwenChat
function M.chat()
  ensure()
  require('qwen.chat').open({ insert = true })
end

--- :QwenReview [action]
function M.review(arg)
  ensure()
  require('qwen.review').command(arg)
end

--- :QwenAsk {prompt}; with a range, the selected lines go along as context.
function M.ask(prompt, range)
  ensure()
  prompt = vim.trim(prompt or '')
  local blocks = {}
  local buf = vim.api.nvim_get_current_buf()
  local util = require('qwen.util')
  local session = require('qwen.session')
  if range and util.is_normal_buffer(buf) then
    local first, last = range[1], range[2]
    local lines = vim.api.nvim_buf_get_lines(buf, first - 1, last, false)
    local uri = vim.uri_from_bufnr(buf)
    table.insert(blocks, {
      type = 'resource',
      resource = { uri = uri, text = table.concat(lines, '\n') .. '\n', mimeType = 'text/plain' },
      label = string.format(' lines %d-%d', first, last),
    })
    -- The lines go once, as this block. Leaving Visual mode for the
    -- command line already sent them as the focus's selection, which the
    -- server would add to the prompt a second time: the focus goes again
    -- with the cursor only.
    session.pending_focus_cursor = true
    require('qwen.chat').last_buf = buf
  elseif util.is_normal_buffer(buf) then
    require('qwen.chat').last_buf = buf
  end
  if prompt == '' then
    util.notify_user('usage: :QwenAsk {prompt}', vim.log.levels.WARN)
    return
  end
  local chat = require('qwen.chat')
  if not chat.is_open() then
    local win = vim.api.nvim_get_current_win()
    chat.open()
    vim.api.nvim_set_current_win(win)
  end
  -- label is for the transcript only
  local sent = {}
  for _, b in ipairs(blocks) do
    table.insert(sent, { type = b.type, resource = b.resource, label = b.label })
  end
  session.prompt(prompt, sent)
end

function M.cancel()
  ensure()
  require('qwen.session').cancel()
end

function M.mode(mode)
  ensure()
  require('qwen.session').set_mode(vim.trim(mode or ''))
end

function M.sessions()
  ensure()
  require('qwen.session').pick_session()
end

function M.new_session()
  ensure()
  require('qwen.session').new_session()
end

--- :QwenModel [id]: sets the chat session's model, or picks one.
function M.model(id)
  ensure()
  local m = require('qwen.model')
  id = vim.trim(id or '')
  if id == '' then
    m.pick()
  else
    m.set(id)
  end
end

--- :QwenStats: the session's model and token totals.
function M.stats()
  ensure()
  return require('qwen.model').stats()
end

--- :Qwen {command} [args]: runs a slash command ("/command args").
function M.command(args)
  ensure()
  return require('qwen.commands').run(args)
end

function M.undo_turn()
  ensure()
  require('qwen.session').undo_turn()
end

--- The statusline component: "qwen: idle [default]",
--- "qwen: working: Read calc.go [default]", "qwen: waiting for you [...]".
function M.statusline()
  return require('qwen.status').statusline()
end

return M
