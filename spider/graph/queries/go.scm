; Go definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.

(package_clause (package_identifier) @name.package)

; --- types: structs and interfaces
(type_spec name: (type_identifier) @name.definition.struct type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name.definition.interface type: (interface_type)) @definition.interface

; --- functions and methods (a method belongs to its receiver's type)
(function_declaration name: (identifier) @name.definition.function body: (block)) @definition.function
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      name: (identifier) @self.definition.method
      type: [(type_identifier) @name.owner
             (pointer_type (type_identifier) @name.owner)
             (generic_type type: (type_identifier) @name.owner)
             (pointer_type (generic_type type: (type_identifier) @name.owner))]))
  name: (field_identifier) @name.definition.method
  body: (block)) @definition.method
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @name.owner
             (pointer_type (type_identifier) @name.owner)
             (generic_type type: (type_identifier) @name.owner)
             (pointer_type (generic_type type: (type_identifier) @name.owner))]))
  name: (field_identifier) @name.definition.method
  body: (block)) @definition.method

; --- embedding (the closest Go has to inheritance)
(field_declaration_list
  (field_declaration !name type: [(type_identifier) @name.reference.inherits
                                  (pointer_type (type_identifier) @name.reference.inherits)])) @reference.inherits
(field_declaration_list
  (field_declaration !name type: [(qualified_type package: (_) @receiver.reference.inherits
                                                  name: (type_identifier) @name.reference.inherits)
                                  (pointer_type (qualified_type package: (_) @receiver.reference.inherits
                                                                name: (type_identifier) @name.reference.inherits))])) @reference.inherits
(interface_type (type_elem (type_identifier) @name.reference.inherits)) @reference.inherits

; --- calls
(call_expression function: (identifier) @name.reference.call) @reference.call
(call_expression
  function: (selector_expression operand: (_) @receiver.reference.call
                                 field: (field_identifier) @name.reference.call)) @reference.call

; --- imports
(import_spec !name path: (interpreted_string_literal (interpreted_string_literal_content) @module.reference.import)) @reference.import
(import_spec name: (package_identifier) @alias.reference.import
             path: (interpreted_string_literal (interpreted_string_literal_content) @module.reference.import)) @reference.import
(import_spec name: (dot) @name.reference.import
             path: (interpreted_string_literal (interpreted_string_literal_content) @module.reference.import)) @reference.import
