-- Small helpers shared by the plugin's modules, and the differences between
-- Neovim 0.7 and later releases, kept in one place.
local M = {}

M.has011 = vim.fn.has('nvim-0.11') == 1
M.has08 = vim.fn.has('nvim-0.8') == 1

--- Sends a request; 0.11 made client methods take self.
function M.request(client, method, params, handler, bufnr)
  if M.has011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.notify(client, method, params)
  if M.has011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.request_sync(client, method, params, timeout, bufnr)
  if M.has011 then
    return client:request_sync(method, params, timeout, bufnr)
  end
  return client.request_sync(method, params, timeout, bufnr)
end

function M.get_clients(name)
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  local out = {}
  for _, c in ipairs(all) do
    if c.name == name then
      table.insert(out, c)
    end
  end
  return out
end

--- Splits text into lines; a final newline does not make an extra line.
function M.lines(text)
  if text == nil or text == '' then
    return {}
  end
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

--- The whole text of a buffer as the server sees it.
function M.buf_text(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, '\n')
  if vim.api.nvim_buf_get_option(buf, 'eol') and not (#lines == 1 and lines[1] == '') then
    text = text .. '\n'
  end
  return text
end

--- Byte offset (0-based) inside `line` of `character` counted in `encoding`
--- ('utf-8', 'utf-16' or 'utf-32').
function M.byte_of(line, character, encoding)
  if encoding == 'utf-8' or character == 0 then
    return math.min(character, #line)
  end
  local units, i = 0, 1
  while i <= #line and units < character do
    local b = line:byte(i)
    local len = b < 0x80 and 1 or b < 0xE0 and 2 or b < 0xF0 and 3 or 4
    if encoding == 'utf-16' and len == 4 then
      units = units + 2
    else
      units = units + 1
    end
    i = i + len
  end
  return i - 1
end

--- Character count of the first `byte` bytes of `line` in `encoding`.
function M.units_of(line, byte, encoding)
  if encoding == 'utf-8' then
    return byte
  end
  local units, i = 0, 1
  while i <= byte and i <= #line do
    local b = line:byte(i)
    local len = b < 0x80 and 1 or b < 0xE0 and 2 or b < 0xF0 and 3 or 4
    units = units + ((encoding == 'utf-16' and len == 4) and 2 or 1)
    i = i + len
  end
  return units
end

--- Converts an LSP position in `text` to a byte offset (0-based).
function M.offset(text, pos, encoding)
  local off, line = 0, 0
  while line < pos.line do
    local nl = text:find('\n', off + 1, true)
    if not nl then
      return #text
    end
    off = nl
    line = line + 1
  end
  local eol = text:find('\n', off + 1, true) or (#text + 1)
  return off + M.byte_of(text:sub(off + 1, eol - 1), pos.character, encoding)
end

--- Applies LSP text edits (sorted, not overlapping) to a string.
function M.apply_edits(text, edits, encoding)
  local out, last = {}, 0
  for _, e in ipairs(edits) do
    local s = M.offset(text, e.range.start, encoding)
    local f = M.offset(text, e.range['end'], encoding)
    table.insert(out, text:sub(last + 1, s))
    table.insert(out, e.newText)
    last = f
  end
  table.insert(out, text:sub(last + 1))
  return table.concat(out)
end

--- Seconds since the epoch of an RFC 3339 time ("2026-11-27T14:03:00Z",
--- "...+01:00"), or nil.
function M.parse_time(iso)
  if type(iso) ~= 'string' then
    return nil
  end
  local y, mo, d, h, mi, sec, rest = iso:match('^(%d+)-(%d+)-(%d+)[T ](%d+):(%d+):(%d+)(.*)$')
  if not y then
    return nil
  end
  rest = rest:gsub('^%.%d+', '')
  local offset = 0
  if rest ~= 'Z' and rest ~= 'z' and rest ~= '' then
    local sign, oh, om = rest:match('^([+-])(%d%d):?(%d%d)$')
    if not sign then
      return nil
    end
    offset = (tonumber(oh) * 3600 + tonumber(om) * 60) * (sign == '-' and -1 or 1)
  end
  -- Days since the epoch of a civil date (proleptic Gregorian).
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo <= 2 then
    y = y - 1
  end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (mo + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec) - offset
end

--- A time for a person: "just now", "5 min ago" within the hour, else the
--- local date and time ("2026-11-27 14:03"). Unknown times as given.
function M.local_time(iso, now)
  local t = M.parse_time(iso)
  if not t then
    return type(iso) == 'string' and iso or ''
  end
  local ago = (now or os.time()) - t
  if ago >= 0 and ago < 60 then
    return 'just now'
  elseif ago >= 0 and ago < 3600 then
    return string.format('%d min ago', math.floor(ago / 60))
  end
  return os.date('%Y-%m-%d %H:%M', t)
end

function M.notify_user(msg, level)
  vim.notify('qwen: ' .. msg, level or vim.log.levels.INFO)
end

--- True while the person is typing (Insert, Replace or command-line
--- mode): anything that asks or stops for a key must wait.
function M.typing()
  return vim.api.nvim_get_mode().mode:match('^[iRc]') ~= nil
end

local held = {}
local held_group = nil

--- Runs fn now, or when the person stops typing (leaves Insert or
--- command-line mode).
function M.when_not_typing(fn)
  if not M.typing() then
    return fn()
  end
  table.insert(held, fn)
  if not held_group then
    held_group = vim.api.nvim_create_augroup('qwen-when-not-typing', { clear = true })
    vim.api.nvim_create_autocmd('ModeChanged', {
      group = held_group,
      callback = function()
        vim.schedule(function()
          if M.typing() or #held == 0 then
            return
          end
          local list = held
          held = {}
          for _, f in ipairs(list) do
            f()
          end
        end)
      end,
    })
  end
end

--- How many functions wait for the person to stop typing.
function M.held_count()
  return #held
end

--- Notifies msg when it fits the command line, else short: a message
--- wider than the command line stops Neovim at a hit-enter prompt, which
--- takes the next keys the person types.
function M.notify_fit(msg, short, level)
  local room = tonumber(vim.v.echospace) or (vim.o.columns - 12)
  if vim.fn.strdisplaywidth('qwen: ' .. msg) > room then
    msg = short
  end
  M.notify_user(msg, level)
end

--- The filetype for a file name, or nil.
function M.filetype_for(path, buf)
  if not (vim.filetype and vim.filetype.match) then
    return nil
  end
  local ok, ft
  if M.has08 then
    ok, ft = pcall(vim.filetype.match, { filename = path })
  else
    ok, ft = pcall(vim.filetype.match, path, buf)
  end
  return ok and ft or nil
end

function M.is_normal_buffer(buf)
  return vim.api.nvim_buf_is_valid(buf)
    and vim.api.nvim_buf_get_option(buf, 'buftype') == ''
    and vim.api.nvim_buf_get_name(buf) ~= ''
end

--- The file a buffer shows: its name when it is a normal buffer of a file
--- on disk, nil for special buffers and for names that are URIs
--- (fugitive://, oil://, ...), which the server has no file for.
function M.file_name(buf)
  if not M.is_normal_buffer(buf) then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name:match('^%a[%w+.-]*://') then
    return nil
  end
  return name
end

return M
