-- :checkhealth qwen. Neovim 0.10+ has vim.health; 0.7 has require('health').
local M = {}

local function reporter()
  if vim.health and vim.health.start then
    return vim.health
  end
  local h = require('health')
  return {
    start = h.report_start,
    ok = h.report_ok,
    warn = h.report_warn,
    error = h.report_error,
    info = h.report_info,
  }
end

function M.check()
  local h = reporter()
  local config = require('qwen.config').options
  h.start('qwen: Neovim')
  local v = vim.version()
  local vs = string.format('%d.%d.%d', v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.7') == 1 then
    h.ok('Neovim ' .. vs)
  else
    h.error('Neovim ' .. vs .. ' is too old', { 'qwen.nvim needs Neovim 0.7 or later' })
  end

  h.start('qwen: the qwen-ls binary')
  local name = config.cmd and config.cmd[1]
  local exe, tried = require('qwen.paths').find_program(name)
  if not exe then
    h.error(string.format('%s not found (the option cmd); looked in: %s', tostring(name), table.concat(tried, ', ')), {
      'Install it: go install github.com/qwen-ls/qwen-ls/cmd/qwen-ls@latest (found on PATH or in ~/go/bin)',
      'or set cmd in require("qwen").setup{ cmd = { "/path/to/qwen-ls", "--stdio" } }',
    })
    return
  end
  local out = vim.fn.system({ exe, '--version' })
  if vim.v.shell_error ~= 0 then
    h.error(exe .. ' --version failed: ' .. vim.trim(out))
    return
  end
  h.ok(vim.trim(out) .. ' (' .. exe .. ')')

  local client_mod = require('qwen.client')
  local util = require('qwen.util')
  local c = client_mod.current(true)
  if not c then
    h.error('qwen-ls could not be started')
    return
  end
  vim.wait(10000, function()
    return client_mod.is_ready(c.id)
  end, 20)
  if not client_mod.is_ready(c.id) then
    h.error('qwen-ls did not answer initialize within 10 s')
    return
  end
  -- Which OS sandbox confines the commands the agent runs unasked
  -- (experimental.qwen.sandbox of the initialize result).
  local caps = c.server_capabilities or {}
  local qwen_caps = type(caps.experimental) == 'table' and caps.experimental.qwen or nil
  local sandbox = type(qwen_caps) == 'table' and qwen_caps.sandbox or nil
  h.start('qwen: sandbox')
  if type(sandbox) ~= 'table' or type(sandbox.summary) ~= 'string' then
    h.warn('qwen-ls did not say which sandbox it uses (an older qwen-ls?)')
  elseif sandbox.readOnly then
    h.ok(sandbox.summary)
  else
    h.warn(sandbox.summary, {
      'Commands judged read-only ask before they run.',
      'Linux: a kernel with Landlock (5.13+, network rules 6.7+); macOS: /usr/bin/sandbox-exec.',
    })
  end

  h.start('qwen: model')
  local session = require('qwen.session')
  -- qwen/checkSetup resolves the model as a prompt would and sends it one
  -- real one-token request; the key is never read here.
  -- With the file the person has open, the answer says which language
  -- servers qwen-ls could start for it.
  local buf = M.person_buf()
  local params = buf and { uri = vim.uri_from_bufnr(buf) } or vim.empty_dict()
  local reply = util.request_sync(c, 'qwen/checkSetup', params, 20000)
  local res, err
  if reply then
    res, err = reply.result, reply.err or reply.error
  else
    err = { message = 'no answer within 20 s' }
  end
  if err and err.code == -32601 then
    return M.check_model_old(h, c, session)
  end
  if err then
    h.error('qwen/checkSetup failed: ' .. (err.message or vim.inspect(err)))
    return
  end
  if type(res) ~= 'table' then
    h.error('qwen/checkSetup gave no result')
    return
  end
  local message = type(res.message) == 'string' and res.message or ''
  -- What the check found is the statusline's word from now on.
  local status = require('qwen.status')
  if res.ok == true then
    status.set_setup(nil)
  elseif res.reason == 'no_model' or status.missing(res) then
    status.set_setup(res)
  end
  if res.ok == true then
    h.ok(message)
  else
    local advice = {}
    local hint = require('qwen.chat').setup_hint(res)
    if hint then
      table.insert(advice, 'To fix it: ' .. hint)
    end
    table.insert(advice, 'See :help qwen-failures')
    h.error(message ~= '' and message or 'the model did not answer', advice)
  end
  M.check_lsp(h, res, buf)
end

--- The file buffer the person was in: :checkhealth shows its report in a
--- buffer of its own.
function M.person_buf()
  local util = require('qwen.util')
  local cur = vim.api.nvim_get_current_buf()
  if util.file_name(cur) then
    return cur
  end
  local last = require('qwen.chat').last_buf
  if last and vim.api.nvim_buf_is_valid(last) and util.file_name(last) then
    return last
  end
  local alt = vim.fn.bufnr('#')
  if alt > 0 and util.file_name(alt) then
    return alt
  end
  return nil
end

--- Code intelligence: which of Neovim's language servers the agent asks
--- for the person's file (qwen/lsp), and which qwen-ls would start itself
--- (the languageServers and lspAllowed of qwen/checkSetup).
function M.check_lsp(h, res, buf)
  h.start('qwen: code intelligence (the lsp tool)')
  if not buf then
    h.info('No file is open: open one and run :checkhealth qwen again to see which language servers the agent can use for it.')
  else
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':~:.')
    local usable = require('qwen.lsp').usable(buf)
    if #usable == 0 then
      h.info(string.format('No language server of Neovim is attached to %s: the agent uses one qwen-ls starts (below), if any.', name))
    end
    for _, u in ipairs(usable) do
      local state = u.initialized and '' or ' (still starting)'
      h.ok(string.format('%s%s, attached to %s: the agent asks it for %s', u.name, state, name, table.concat(u.methods, ', ')))
    end
    if vim.fn.has('nvim-0.10') == 0 then
      h.info('Neovim 0.7 answers the agent on the spot: each request waits at most a few seconds for the language servers (0.10 does not block).')
    end
  end
  if type(res.languageServers) ~= 'table' then
    h.info('This qwen-ls does not say which language servers it can start (an older version?).')
    return
  end
  local allowed = res.lspAllowed ~= false
  if not allowed then
    h.warn('This folder is not trusted: qwen-ls starts no language server of its own here.', {
      'The agent still gets answers from Neovim\'s own language servers.',
      'Trust the folder to let qwen-ls start them: run qwen-ls trust in it from a shell.',
    })
  end
  local others = {}
  for _, ls in ipairs(res.languageServers) do
    local langs = type(ls.languages) == 'table' and table.concat(ls.languages, ', ') or ''
    local label = string.format('%s (%s)', tostring(ls.name), langs)
    if ls.forFile then
      if not ls.installed then
        h.info(string.format('%s covers this file but is not installed (%s not on PATH)', label, tostring(ls.command)))
      elseif allowed then
        h.ok(string.format('qwen-ls can start %s for this file (%s) when Neovim\'s servers do not cover it', label, tostring(ls.command)))
      else
        h.info(string.format('%s is installed and covers this file, but not in an untrusted folder', label))
      end
    elseif ls.installed then
      table.insert(others, tostring(ls.name))
    end
  end
  if #others > 0 then
    h.info('Other language servers qwen-ls can start: ' .. table.concat(others, ', '))
  end
end

--- A qwen-ls without qwen/checkSetup: the model a new session reports.
function M.check_model_old(h, c, session)
  local util = require('qwen.util')
  local res, err
  local reply = util.request_sync(c, 'qwen/newSession', { cwd = c.config.root_dir }, 10000)
  if reply then
    res, err = reply.result, reply.err or reply.error
  else
    err = { message = 'no answer' }
  end
  if err then
    h.error('qwen/newSession failed: ' .. (err.message or vim.inspect(err)))
    return
  end
  if res.model == nil or res.model == vim.NIL then
    h.warn('no model is configured', {
      'Set OPENAI_API_KEY (or DASHSCOPE_API_KEY), OPENAI_BASE_URL and OPENAI_MODEL in the environment',
      'or model.name / model.baseUrl in ~/.qwen/settings.json, or model in setup{}',
    })
  else
    h.ok('model: ' .. tostring(res.model) .. ', approval mode: ' .. tostring(res.approvalMode) .. ' (this qwen-ls cannot try it: no qwen/checkSetup)')
  end
  if not session.session_id then
    -- Keep the session for the chat rather than leaving an empty one behind.
    session.client_id, session.session_id = c.id, res.sessionId
  end
end

return M
